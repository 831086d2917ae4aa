"""HTTPBackend: the placement contract over a real OpenStack Placement API.

Everything about reaching the service (auth plugin, token refresh, catalog
lookup, TLS, connect and 503 retries) is keystoneauth's, configured by the
session, auth and adapter options of ``[placement]``. This module only maps
contract calls onto the documented endpoints and Placement's errors onto
``rtframework.placement.errors``.

Every request carries ``OpenStack-API-Version: placement 1.39``. Lower
versions lose what the contract relies on: consumer generations (1.28),
consumer types (1.38), POST /allocations (1.13), provider trees and
``in_tree`` (1.14), forbidden traits (1.22), repeated ``member_of`` (1.24),
forbidden aggregates ``member_of=!in:`` (1.32), provider summaries of whole
trees (1.29) and ``required=in:`` (1.39);
request groups take numbered groups (1.25), ``in_tree{N}`` (1.31), string
suffixes (1.33), ``mappings`` (1.34), ``root_required`` and resourceless
groups (1.35) and ``same_subtree`` (1.36).

Longer than most modules because it is the whole contract, one short
method per operation, against one API; splitting it would scatter the
one request helper and error mapping they all share.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

from rtframework import retry
from rtframework.conf import placement as conf_placement
from rtframework.placement import backend as contract
from rtframework.placement import errors, validation
from rtframework.placement import types as t
from rtframework.placement.httperrors import (
    Kind,
    answer_error,
    error_for,
    json_body,
    response_detail,
)
from rtframework.placement.pause_gc import pause_gc

LOG = logging.getLogger(__name__)

GROUP = "placement"
MICROVERSION = "1.39"
SERVICE_TYPE = "placement"

_INVENTORY_FIELDS = ("total", "reserved", "min_unit", "max_unit", "step_size",
                     "allocation_ratio")
# keystoneauth's ways of saying "the service could not be reached".
_UNREACHABLE = (ks_exc.ConnectionError, ks_exc.EndpointNotFound, ks_exc.DiscoveryFailure)


_PROVIDER_KEYS = ("uuid", "name", "generation")


def _int(value: Any) -> int:
    """An integer of an answer (bool and float are not)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def _generation(body: Mapping[str, Any]) -> int:
    return _int(body["resource_provider_generation"])


def _inventory_body(inv: t.Inventory) -> dict[str, Any]:
    return {name: getattr(inv, name) for name in _INVENTORY_FIELDS}


def _inventory(body: Mapping[str, Any]) -> t.Inventory:
    return t.Inventory(**{name: body[name] for name in _INVENTORY_FIELDS if name in body})


def _provider(body: Mapping[str, Any]) -> t.ResourceProvider:
    return t.ResourceProvider(
        uuid=str(body["uuid"]), name=str(body["name"]), generation=_int(body["generation"]),
        parent_uuid=body.get("parent_provider_uuid"), root_uuid=body.get("root_provider_uuid"),
    )


def _allocations(body: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """{provider: {"resources": {rc: n}}} -> provider -> rc -> n."""
    return {str(rp): {str(rc): _int(n) for rc, n in entry["resources"].items()}
            for rp, entry in body.items()}


def _allocations_body(allocations: t.Allocations) -> dict[str, Any]:
    return {rp: {"resources": dict(resources)} for rp, resources in allocations.items()}


def _query_params(required: frozenset[str], forbidden: frozenset[str],
                  member_of: Sequence[frozenset[str]], in_tree: str | None,
                  resources: Mapping[str, int],
                  forbidden_aggregates: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """The filters GET /resource_providers and /allocation_candidates share."""
    params: list[tuple[str, str]] = []
    if resources:
        params.append(("resources", ",".join(f"{rc}:{n}" for rc, n in sorted(resources.items()))))
    if required or forbidden:
        params.append(("required", ",".join(sorted(required) + [f"!{n}" for n in
                                                                  sorted(forbidden)])))
    for any_of in member_of:
        params.append(("member_of", "in:" + ",".join(sorted(any_of))))
    if forbidden_aggregates:
        params.append(("member_of", "!in:" + ",".join(sorted(forbidden_aggregates))))
    if in_tree is not None:
        params.append(("in_tree", in_tree))
    return params


class HTTPBackend(contract.PlacementBackend):
    """Placement at the endpoint ``[placement]``'s keystoneauth options find."""

    @classmethod
    def register_opts(cls, conf: cfg.ConfigOpts) -> None:
        # [placement] with keystoneauth's session, auth and adapter options.
        conf_placement.register_opts(conf)

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        super().__init__(conf)
        auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
        session = ks_loading.load_session_from_conf_options(conf, GROUP, auth=auth)
        self.adapter = ks_loading.load_adapter_from_conf_options(
            conf, GROUP, session=session, auth=auth,
            # The microversion header names the service type, so it must be
            # set even when endpoint_override makes the catalog irrelevant.
            service_type=conf[GROUP].service_type or SERVICE_TYPE,
            default_microversion=MICROVERSION,
        )

    def close(self) -> None:
        self.adapter.session.session.close()

    # -- one request -------------------------------------------------------
    def _request(self, method: str, path: str, kind: Kind, *, json: Any = None,
                 params: Sequence[tuple[str, str]] | None = None,
                 missing_ok: bool = False, expect: tuple[str, ...] = (),
                 parse: Callable[[Any], Any] | None = None, large: bool = False,
                 microversion: str | None = None) -> Any:
        """Send one request; return its JSON body (None if it has none).

        ``expect`` names the keys a JSON object answer must have; an answer
        that is not JSON or lacks them is a :class:`errors.BadAnswer`
        naming the endpoint, the status and what was expected.
        ``parse`` turns the body into the value returned; a body it cannot
        read is a BadAnswer too. ``missing_ok`` turns a 404 into None for
        callers for which "already gone" is success. ``large`` answers
        are decoded and parsed with automatic garbage collection paused
        (see pause_gc).
        """
        what = f"{method} {path}"
        kwargs: dict[str, Any] = {"raise_exc": False}
        if json is not None:
            kwargs["json"] = json
        if params:
            kwargs["params"] = list(params)
        if microversion is not None:
            kwargs["microversion"] = microversion
        try:
            resp = self.adapter.request(path, method, **kwargs)
        except _UNREACHABLE as exc:
            raise errors.BackendUnavailable(f"{what}: placement unreachable: {exc}") from exc
        except ks_exc.ClientException as exc:
            raise errors.PlacementError(f"{what}: {exc}") from exc
        if resp.status_code == 404 and missing_ok:
            return None
        if resp.status_code >= 400:
            code, detail = response_detail(resp)
            raise error_for(resp.status_code, code, detail, kind, what)
        if not resp.content:
            if expect:
                raise answer_error(resp, what, expect, "an empty body")
            return None
        with pause_gc() if large else contextlib.nullcontext():
            return self._decoded(resp, what, expect, parse)

    @staticmethod
    def _decoded(resp: Any, what: str, expect: tuple[str, ...],
                 parse: Callable[[Any], Any] | None) -> Any:
        body = json_body(resp, what, expect)
        if parse is None:
            return body
        try:
            return parse(body)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise answer_error(resp, what, ", ".join(expect) or "Placement's schema",
                               f"a body of another shape ({type(exc).__name__}: {exc})"
                               ) from exc

    # -- resource classes and traits ------------------------------------
    def list_resource_classes(self) -> list[str]:
        return self._request("GET", "/resource_classes", Kind.RESOURCE_CLASS,
                             expect=("resource_classes",),
                             parse=lambda b: sorted(str(c["name"]) for c in b["resource_classes"]))

    def ensure_resource_class(self, name: str) -> None:
        validation.check_resource_class_name(name)
        if name in validation.STANDARD_CLASSES:
            return
        self._request("PUT", f"/resource_classes/{name}", Kind.RESOURCE_CLASS)

    def delete_resource_class(self, name: str) -> None:
        validation.check_custom_resource_class_name(name)
        self._request("DELETE", f"/resource_classes/{name}", Kind.RESOURCE_CLASS)
        LOG.info("deleted resource class %s", name)

    def rename_resource_class(self, name: str, new_name: str) -> None:
        validation.check_custom_resource_class_name(name)
        validation.check_custom_resource_class_name(new_name)
        # Placement renames only at 1.2 to 1.6; 1.7 made PUT create-or-keep.
        self._request("PUT", f"/resource_classes/{name}", Kind.RESOURCE_CLASS,
                      json={"name": new_name}, microversion="1.6")
        LOG.info("renamed resource class %s to %s", name, new_name)

    def list_traits(self, prefix: str | None = None, *,
                    associated: bool | None = None) -> list[str]:
        params = [("name", f"startswith:{prefix}")] if prefix else []
        if associated is not None:
            params.append(("associated", "true" if associated else "false"))
        return self._request("GET", "/traits", Kind.TRAIT, params=params, expect=("traits",),
                             parse=lambda b: sorted(str(n) for n in b["traits"]))

    def ensure_trait(self, name: str) -> None:
        validation.check_trait_name(name)
        if name in validation.STANDARD_TRAITS:
            return
        self._request("PUT", f"/traits/{name}", Kind.TRAIT)

    def delete_trait(self, name: str) -> None:
        validation.check_custom_trait_name(name)
        self._request("DELETE", f"/traits/{name}", Kind.TRAIT)
        LOG.info("deleted trait %s", name)

    # -- providers -------------------------------------------------------
    def create_provider(
        self, name: str, uuid: str | None = None, parent_uuid: str | None = None
    ) -> t.ResourceProvider:
        validation.check_provider_name(name)
        body: dict[str, Any] = {"name": name}
        if uuid is not None:
            body["uuid"] = validation.normalize_uuid(uuid, "provider uuid")
        if parent_uuid is not None:
            body["parent_provider_uuid"] = validation.normalize_uuid(
                parent_uuid, "parent provider uuid")
        created = self._request("POST", "/resource_providers", Kind.PROVIDER, json=body,
                                expect=_PROVIDER_KEYS, parse=_provider)
        LOG.info("created resource provider %s (%s), parent %s", created.uuid, name, parent_uuid)
        return created

    def get_provider(self, uuid: str) -> t.ResourceProvider:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        return self._request("GET", f"/resource_providers/{uuid}", Kind.PROVIDER,
                             expect=_PROVIDER_KEYS, parse=_provider)

    def list_providers(self, query: t.ProviderQuery | None = None) -> list[t.ResourceProvider]:
        query = validation.provider_query(query)
        params = _query_params(query.required_traits, query.forbidden_traits, query.member_of,
                               query.in_tree, query.resources)
        if query.uuid is not None:
            params.append(("uuid", query.uuid))
        if query.name is not None:
            params.append(("name", query.name))
        return self._request("GET", "/resource_providers", Kind.QUERY, params=params,
                             expect=("resource_providers",),
                             parse=lambda b: [_provider(rp) for rp in b["resource_providers"]])

    def update_provider(
        self, uuid: str, *, name: str, parent_uuid: str | None = None, detach: bool = False
    ) -> t.ResourceProvider:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        validation.check_provider_name(name)
        # Leaving parent_provider_uuid out keeps the current parent; sending
        # null would detach the provider from its tree (1.37).
        body: dict[str, Any] = {"name": name}
        if parent_uuid is not None:
            body["parent_provider_uuid"] = validation.normalize_uuid(
                parent_uuid, "parent provider uuid")
        elif detach:
            body["parent_provider_uuid"] = None
        return self._request("PUT", f"/resource_providers/{uuid}", Kind.PROVIDER, json=body,
                             expect=_PROVIDER_KEYS, parse=_provider)

    def delete_provider(self, uuid: str) -> None:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        self._request("DELETE", f"/resource_providers/{uuid}", Kind.PROVIDER)
        LOG.info("deleted resource provider %s", uuid)

    # -- inventory -------------------------------------------------------
    def get_inventories(self, uuid: str) -> t.ProviderInventories:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        return self._request(
            "GET", f"/resource_providers/{uuid}/inventories", Kind.INVENTORY,
            expect=("resource_provider_generation", "inventories"),
            parse=lambda b: t.ProviderInventories(
                generation=_int(b["resource_provider_generation"]),
                inventories={rc: _inventory(inv) for rc, inv in b["inventories"].items()}))

    def set_inventories(
        self, uuid: str, generation: int, inventories: Mapping[str, t.Inventory]
    ) -> int:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        validation.check_generation(generation, f"generation of provider {uuid}")
        inventories = validation.check_inventories(uuid, inventories)
        return self._request(
            "PUT", f"/resource_providers/{uuid}/inventories", Kind.INVENTORY,
            json={"resource_provider_generation": generation,
                  "inventories": {rc: _inventory_body(inv) for rc, inv in inventories.items()}},
            expect=("resource_provider_generation",), parse=_generation)

    def set_inventory(
        self, uuid: str, generation: int, resource_class: str, inventory: t.Inventory
    ) -> int:
        validation.check_inventories(uuid, {resource_class: inventory})
        # Placement creates a class with POST and changes it with PUT; the
        # whole-inventory PUT below does either, with the caller's generation.
        current = self.get_inventories(uuid)
        return self.set_inventories(
            uuid, generation, {**current.inventories, resource_class: inventory})

    def delete_inventory(self, uuid: str, generation: int, resource_class: str) -> int:
        validation.check_resource_class_name(resource_class)
        validation.check_generation(generation, f"generation of provider {uuid}")
        # DELETE .../inventories/{rc} takes no generation, so it could remove
        # a class another writer has just changed. Replacing the whole
        # inventory minus the class is the same change with the caller's
        # generation checked.
        current = self.get_inventories(uuid)
        if resource_class not in current.inventories:
            raise errors.NotFound(f"provider {uuid} has no inventory of {resource_class}")
        rest = {rc: inv for rc, inv in current.inventories.items() if rc != resource_class}
        return self.set_inventories(uuid, generation, rest)

    # -- traits and aggregates of a provider -----------------------------
    # Both are a set of names under the provider, read and replaced with
    # the provider generation in the same body shape.
    def _get_set(self, uuid: str, name: str, kind: Kind) -> tuple[int, frozenset[str]]:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        return self._request(
            "GET", f"/resource_providers/{uuid}/{name}", kind,
            expect=("resource_provider_generation", name),
            parse=lambda b: (_int(b["resource_provider_generation"]),
                             frozenset(str(v) for v in b[name])))

    def _put_set(self, uuid: str, name: str, kind: Kind, generation: int,
                 values: frozenset[str]) -> int:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        validation.check_generation(generation, f"generation of provider {uuid}")
        return self._request(
            "PUT", f"/resource_providers/{uuid}/{name}", kind,
            json={"resource_provider_generation": generation, name: sorted(values)},
            expect=("resource_provider_generation",), parse=_generation)

    def get_provider_traits(self, uuid: str) -> t.ProviderTraits:
        generation, traits = self._get_set(uuid, "traits", Kind.PROVIDER_TRAITS)
        return t.ProviderTraits(generation=generation, traits=traits)

    def set_provider_traits(self, uuid: str, generation: int, traits: frozenset[str]) -> int:
        return self._put_set(uuid, "traits", Kind.PROVIDER_TRAITS, generation,
                             validation.trait_set(traits))

    def get_provider_aggregates(self, uuid: str) -> t.ProviderAggregates:
        generation, aggregates = self._get_set(uuid, "aggregates", Kind.AGGREGATES)
        return t.ProviderAggregates(generation=generation, aggregates=aggregates)

    def set_provider_aggregates(
        self, uuid: str, generation: int, aggregates: frozenset[str], *, bump: bool = True
    ) -> int:
        aggregates = validation.aggregates(aggregates)
        if bump:
            return self._put_set(uuid, "aggregates", Kind.AGGREGATES, generation, aggregates)
        # Placement 1.18 and older take a bare list and bump nothing; the
        # generation is checked here first, as a later write would do.
        current = self.get_provider_aggregates(uuid)
        if current.generation != generation:
            raise errors.ProviderGenerationConflict(
                f"resource provider generation conflict on {uuid}: given {generation}, "
                f"current {current.generation}")
        self._request("PUT", f"/resource_providers/{uuid}/aggregates", Kind.AGGREGATES,
                      json=sorted(aggregates), microversion="1.18")
        return generation

    # -- allocations -----------------------------------------------------
    def get_consumer_allocations(self, consumer_uuid: str) -> t.ConsumerAllocations:
        consumer_uuid = validation.normalize_uuid(consumer_uuid, "consumer uuid")

        def parse(body: Any) -> t.ConsumerAllocations:
            if not body["allocations"]:
                return t.ConsumerAllocations(consumer_uuid=consumer_uuid, allocations={})
            return t.ConsumerAllocations(
                consumer_uuid=consumer_uuid,
                allocations=_allocations(body["allocations"]),
                generation=_int(body.get("consumer_generation")),
                project_id=body.get("project_id"),
                user_id=body.get("user_id"),
                consumer_type=body.get("consumer_type"),
            )

        return self._request("GET", f"/allocations/{consumer_uuid}", Kind.ALLOCATIONS,
                             expect=("allocations",), parse=parse)

    def get_provider_allocations(self, uuid: str) -> dict[str, dict[str, int]]:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        return self._request("GET", f"/resource_providers/{uuid}/allocations", Kind.PROVIDER,
                             expect=("allocations",),
                             parse=lambda b: _allocations(b["allocations"]))

    def write_allocations(self, writes: Sequence[t.AllocationWrite]) -> None:
        # Always POST /allocations, even for one consumer: one request shape,
        # one set of semantics (all or nothing, empty means remove).
        writes = [w for w in validation.allocation_writes(writes)
                  if not self._nothing_to_write(w)]
        if not writes:
            return
        body = {
            w.consumer_uuid: {
                "allocations": _allocations_body(w.allocations),
                "project_id": w.project_id,
                "user_id": w.user_id,
                "consumer_generation": w.consumer_generation,
                # Placement 1.38+ requires a type: a write naming none
                # records the default.
                "consumer_type": w.consumer_type or "INSTANCE",
            }
            for w in writes
        }
        self._request("POST", "/allocations", Kind.ALLOCATIONS, json=body)
        for w in writes:
            if not w.allocations:
                LOG.info("allocation released: consumer %s on every provider "
                         "(consumer generation %s)", w.consumer_uuid, w.consumer_generation)
            for provider, resources in sorted(w.allocations.items()):
                LOG.info("allocation written: consumer %s on provider %s: %s "
                         "(consumer generation %s)", w.consumer_uuid, provider,
                         dict(resources), w.consumer_generation)

    def _nothing_to_write(self, w: t.AllocationWrite) -> bool:
        """A consumer believed new that is to hold nothing, and is unknown.

        Placement would create its consumer record and, as no allocation row
        refers to it, keep it: an invisible consumer at generation 0 that
        refuses the next write naming generation None. Leaving it out of the
        request is the same outcome without that record. A consumer that
        does hold something stays in, so Placement reports the conflict.
        """
        if w.allocations or w.consumer_generation is not None:
            return False
        return not self.get_consumer_allocations(w.consumer_uuid).allocations

    def reshape(self, inventories: Mapping[str, t.ProviderInventories],
                allocations: Sequence[t.AllocationWrite]) -> None:
        writes = validation.allocation_writes(allocations)
        body = {
            "inventories": {
                validation.normalize_uuid(rp, "provider uuid"): {
                    "resource_provider_generation": invs.generation,
                    "inventories": {rc: _inventory_body(inv)
                                    for rc, inv in validation.check_inventories(
                                        rp, invs.inventories).items()},
                } for rp, invs in inventories.items()},
            "allocations": {
                w.consumer_uuid: {
                    "allocations": _allocations_body(w.allocations),
                    "project_id": w.project_id, "user_id": w.user_id,
                    "consumer_generation": w.consumer_generation,
                    # Placement 1.38+ requires a type: a write naming none
                # records the default.
                "consumer_type": w.consumer_type or "INSTANCE",
                } for w in writes},
        }
        self._request("POST", "/reshaper", Kind.ALLOCATIONS, json=body)
        LOG.info("reshaped providers %s and consumers %s", ", ".join(sorted(inventories)),
                 ", ".join(w.consumer_uuid for w in writes))

    def delete_allocations(self, consumer_uuid: str) -> None:
        consumer_uuid = validation.normalize_uuid(consumer_uuid, "consumer uuid")
        # Placement's DELETE /allocations/{consumer} leaves the providers'
        # generations alone, while the contract (and the tracker's heal,
        # which re-reads allocations only when a generation moved) wants
        # emptying a consumer to bump every provider it held, as an empty
        # write does. So: an empty write at the consumer's current
        # generation, re-read when someone else wrote.
        def attempt() -> None:
            held = self.get_consumer_allocations(consumer_uuid)
            if not held.allocations:
                return
            self.write_allocations([held.emptied()])

        retry.on_conflict(attempt, self.conf.placement.conflict_retries,
                          f"delete allocations of consumer {consumer_uuid}")

    # -- usages and candidates -------------------------------------------
    def get_provider_usages(self, uuid: str) -> dict[str, int]:
        uuid = validation.normalize_uuid(uuid, "provider uuid")
        return self._request(
            "GET", f"/resource_providers/{uuid}/usages", Kind.PROVIDER, expect=("usages",),
            parse=lambda b: {str(rc): _int(n) for rc, n in sorted(b["usages"].items())})

    def get_project_usages(self, project_id: str, user_id: str | None = None) -> dict[str, int]:
        validation.check_external_id(project_id, "project id")
        params = [("project_id", project_id), ("consumer_type", "all")]
        if user_id is not None:
            params.append(("user_id", validation.check_external_id(user_id, "user id")))
        # 1.38 groups usages by consumer type; "all" is the sum of them.
        return self._request(
            "GET", "/usages", Kind.QUERY, params=params, expect=("usages",),
            parse=lambda b: {rc: _int(n) for rc, n in b["usages"].get("all", {}).items()
                             if rc != "consumer_count"})

    def get_project_usages_by_type(self, project_id: str, user_id: str | None = None,
                                   consumer_type: str | None = None
                                   ) -> dict[str, dict[str, int]]:
        validation.check_external_id(project_id, "project id")
        params = [("project_id", project_id)]
        if user_id is not None:
            params.append(("user_id", validation.check_external_id(user_id, "user id")))
        if consumer_type is not None:
            params.append(("consumer_type", consumer_type))
        return self._request(
            "GET", "/usages", Kind.QUERY, params=params, expect=("usages",),
            parse=lambda b: {str(kind): {str(rc): _int(n) for rc, n in amounts.items()}
                             for kind, amounts in b["usages"].items()})

    def get_allocation_candidates(self, query: t.CandidateQuery) -> t.AllocationCandidates:
        query = validation.candidate_query(query)
        params = _query_params(query.required_traits, query.forbidden_traits, query.member_of,
                               query.in_tree, query.resources, query.forbidden_aggregates)
        for suffix, group in sorted(query.groups.items()):
            params += [(f"{name}{suffix}", value) for name, value in _query_params(
                group.required_traits, group.forbidden_traits, group.member_of,
                group.in_tree, group.resources, group.forbidden_aggregates)]
        if query.group_policy is not None:
            params.append(("group_policy", query.group_policy))
        if query.root_required or query.root_forbidden:
            params.append(("root_required", ",".join(
                sorted(query.root_required) + [f"!{n}" for n in sorted(query.root_forbidden)])))
        for suffixes in query.same_subtree:
            params.append(("same_subtree", ",".join(sorted(suffixes))))
        if query.limit is not None:
            params.append(("limit", str(query.limit)))
        return self._request("GET", "/allocation_candidates", Kind.QUERY, params=params,
                             expect=("allocation_requests", "provider_summaries"),
                             parse=_candidates, large=True)


def _candidates(body: Mapping[str, Any]) -> t.AllocationCandidates:
    requests = tuple(
        t.AllocationRequest(
            allocations=_allocations(req["allocations"]),
            mappings={str(s): tuple(p) for s, p in req.get("mappings", {}).items()})
        for req in body["allocation_requests"]
    )
    summaries = {
        rp: t.ProviderSummary(
            uuid=rp,
            root_uuid=summary["root_provider_uuid"],
            parent_uuid=summary.get("parent_provider_uuid"),
            resources={
                rc: t.ResourceSummary(capacity=_int(r["capacity"]), used=_int(r["used"]))
                for rc, r in summary["resources"].items()
            },
            traits=frozenset(summary.get("traits", ())),
        )
        for rp, summary in body["provider_summaries"].items()
    }
    return t.AllocationCandidates(allocation_requests=requests, provider_summaries=summaries)
