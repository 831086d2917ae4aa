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
provider summaries of whole trees (1.29) and ``required=in:`` (1.39).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

import os_resource_classes
import os_traits
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

from rtframework import retry
from rtframework.placement import backend as contract
from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.httperrors import Kind, detail_of, error_for

LOG = logging.getLogger(__name__)

GROUP = "placement"
MICROVERSION = "1.39"
SERVICE_TYPE = "placement"

_STANDARD_CLASSES = frozenset(os_resource_classes.STANDARDS)
_STANDARD_TRAITS = frozenset(os_traits.get_traits())
_CUSTOM_NAME = re.compile(r"^CUSTOM_[A-Z0-9_]{1,248}$")
_INVENTORY_FIELDS = ("total", "reserved", "min_unit", "max_unit", "step_size",
                     "allocation_ratio")
# keystoneauth's ways of saying "the service could not be reached".
_UNREACHABLE = (ks_exc.ConnectionError, ks_exc.EndpointNotFound, ks_exc.DiscoveryFailure)


def _inventory_body(inv: t.Inventory) -> dict[str, Any]:
    return {name: getattr(inv, name) for name in _INVENTORY_FIELDS}


def _inventory(body: Mapping[str, Any]) -> t.Inventory:
    return t.Inventory(**{name: body[name] for name in _INVENTORY_FIELDS if name in body})


def _provider(body: Mapping[str, Any]) -> t.ResourceProvider:
    return t.ResourceProvider(
        uuid=body["uuid"], name=body["name"], generation=body["generation"],
        parent_uuid=body.get("parent_provider_uuid"), root_uuid=body.get("root_provider_uuid"),
    )


def _allocations(body: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """{provider: {"resources": {rc: n}}} -> provider -> rc -> n."""
    return {rp: dict(entry["resources"]) for rp, entry in body.items()}


def _allocations_body(allocations: t.Allocations) -> dict[str, Any]:
    return {rp: {"resources": dict(resources)} for rp, resources in allocations.items()}


def _check_inventory(uuid: str, resource_class: str, inv: t.Inventory) -> None:
    """The contract's inventory rules that Placement itself does not check.

    Placement accepts an allocation_ratio of 0 and min_unit > max_unit, both
    of which make the class unallocatable without saying so, and reports a
    malformed class name as an unknown one.
    """
    where = f"inventory of {resource_class} on provider {uuid}"
    if resource_class not in _STANDARD_CLASSES and not _CUSTOM_NAME.match(resource_class):
        raise errors.InvalidResourceClass(
            f"{where}: {resource_class!r} is neither a standard class nor CUSTOM_[A-Z0-9_]+")
    if not inv.allocation_ratio > 0:
        raise errors.InvalidInventory(
            f"{where}: allocation_ratio {inv.allocation_ratio!r} must be > 0")
    if inv.min_unit > inv.max_unit:
        raise errors.InvalidInventory(
            f"{where}: min_unit {inv.min_unit} > max_unit {inv.max_unit}")


def _query_params(required: frozenset[str], forbidden: frozenset[str],
                  member_of: Sequence[frozenset[str]], in_tree: str | None,
                  resources: Mapping[str, int]) -> list[tuple[str, str]]:
    """The filters GET /resource_providers and /allocation_candidates share."""
    params: list[tuple[str, str]] = []
    if resources:
        params.append(("resources", ",".join(f"{rc}:{n}" for rc, n in sorted(resources.items()))))
    if required or forbidden:
        params.append(("required", ",".join(sorted(required) + [f"!{n}" for n in
                                                                  sorted(forbidden)])))
    for any_of in member_of:
        params.append(("member_of", "in:" + ",".join(sorted(any_of))))
    if in_tree is not None:
        params.append(("in_tree", in_tree))
    return params


class HTTPBackend(contract.PlacementBackend):
    """Placement at the endpoint ``[placement]``'s keystoneauth options find."""

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
                 missing_ok: bool = False) -> Any:
        """Send one request; return its JSON body (None if it has none).

        ``missing_ok`` turns a 404 into None for callers for which "already
        gone" is success.
        """
        what = f"{method} {path}"
        kwargs: dict[str, Any] = {"raise_exc": False}
        if json is not None:
            kwargs["json"] = json
        if params:
            kwargs["params"] = list(params)
        try:
            resp = self.adapter.request(path, method, **kwargs)
        except _UNREACHABLE as exc:
            raise errors.BackendUnavailable(f"{what}: placement unreachable: {exc}") from exc
        except ks_exc.ClientException as exc:
            raise errors.PlacementError(f"{what}: {exc}") from exc
        if resp.status_code == 404 and missing_ok:
            return None
        if resp.status_code >= 400:
            try:
                body = resp.json()
            except ValueError:
                body = None
            code, detail = detail_of(body, resp.text.strip() or resp.reason or "")
            raise error_for(resp.status_code, code, detail, kind, what)
        if not resp.content:
            return None
        return resp.json()

    # -- resource classes and traits ------------------------------------
    def list_resource_classes(self) -> list[str]:
        body = self._request("GET", "/resource_classes", Kind.RESOURCE_CLASS)
        return sorted(rc["name"] for rc in body["resource_classes"])

    def ensure_resource_class(self, name: str) -> None:
        if name in _STANDARD_CLASSES:
            return
        self._request("PUT", f"/resource_classes/{name}", Kind.RESOURCE_CLASS)

    def delete_resource_class(self, name: str) -> None:
        self._request("DELETE", f"/resource_classes/{name}", Kind.RESOURCE_CLASS)
        LOG.info("deleted resource class %s", name)

    def list_traits(self, prefix: str | None = None) -> list[str]:
        params = [("name", f"startswith:{prefix}")] if prefix else None
        body = self._request("GET", "/traits", Kind.TRAIT, params=params)
        return sorted(body["traits"])

    def ensure_trait(self, name: str) -> None:
        if name in _STANDARD_TRAITS:
            return
        self._request("PUT", f"/traits/{name}", Kind.TRAIT)

    # -- providers -------------------------------------------------------
    def create_provider(
        self, name: str, uuid: str | None = None, parent_uuid: str | None = None
    ) -> t.ResourceProvider:
        body: dict[str, Any] = {"name": name}
        if uuid is not None:
            body["uuid"] = uuid
        if parent_uuid is not None:
            body["parent_provider_uuid"] = parent_uuid
        created = _provider(self._request("POST", "/resource_providers", Kind.PROVIDER,
                                          json=body))
        LOG.info("created resource provider %s (%s), parent %s", created.uuid, name, parent_uuid)
        return created

    def get_provider(self, uuid: str) -> t.ResourceProvider:
        return _provider(self._request("GET", f"/resource_providers/{uuid}", Kind.PROVIDER))

    def list_providers(self, query: t.ProviderQuery | None = None) -> list[t.ResourceProvider]:
        query = query or t.ProviderQuery()
        params = _query_params(query.required_traits, query.forbidden_traits, query.member_of,
                               query.in_tree, query.resources)
        if query.uuid is not None:
            params.append(("uuid", query.uuid))
        if query.name is not None:
            params.append(("name", query.name))
        body = self._request("GET", "/resource_providers", Kind.QUERY, params=params)
        return [_provider(rp) for rp in body["resource_providers"]]

    def update_provider(
        self, uuid: str, *, name: str, parent_uuid: str | None = None
    ) -> t.ResourceProvider:
        # Leaving parent_provider_uuid out keeps the current parent; sending
        # null would detach the provider from its tree (1.37).
        body: dict[str, Any] = {"name": name}
        if parent_uuid is not None:
            body["parent_provider_uuid"] = parent_uuid
        return _provider(self._request("PUT", f"/resource_providers/{uuid}", Kind.PROVIDER,
                                       json=body))

    def delete_provider(self, uuid: str) -> None:
        self._request("DELETE", f"/resource_providers/{uuid}", Kind.PROVIDER)
        LOG.info("deleted resource provider %s", uuid)

    # -- inventory -------------------------------------------------------
    def get_inventories(self, uuid: str) -> t.ProviderInventories:
        body = self._request("GET", f"/resource_providers/{uuid}/inventories", Kind.INVENTORY)
        return t.ProviderInventories(
            generation=body["resource_provider_generation"],
            inventories={rc: _inventory(inv) for rc, inv in body["inventories"].items()},
        )

    def set_inventories(
        self, uuid: str, generation: int, inventories: Mapping[str, t.Inventory]
    ) -> int:
        for rc, inv in sorted(inventories.items()):
            _check_inventory(uuid, rc, inv)
        body = self._request(
            "PUT", f"/resource_providers/{uuid}/inventories", Kind.INVENTORY,
            json={"resource_provider_generation": generation,
                  "inventories": {rc: _inventory_body(inv) for rc, inv in inventories.items()}},
        )
        return body["resource_provider_generation"]

    def set_inventory(
        self, uuid: str, generation: int, resource_class: str, inventory: t.Inventory
    ) -> int:
        # Placement creates a class with POST and changes it with PUT; the
        # whole-inventory PUT below does either, with the caller's generation.
        current = self.get_inventories(uuid)
        return self.set_inventories(
            uuid, generation, {**current.inventories, resource_class: inventory})

    def delete_inventory(self, uuid: str, generation: int, resource_class: str) -> int:
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
        body = self._request("GET", f"/resource_providers/{uuid}/{name}", kind)
        return body["resource_provider_generation"], frozenset(body[name])

    def _put_set(self, uuid: str, name: str, kind: Kind, generation: int,
                 values: frozenset[str]) -> int:
        body = self._request("PUT", f"/resource_providers/{uuid}/{name}", kind, json={
            "resource_provider_generation": generation, name: sorted(values)})
        return body["resource_provider_generation"]

    def get_provider_traits(self, uuid: str) -> t.ProviderTraits:
        generation, traits = self._get_set(uuid, "traits", Kind.PROVIDER_TRAITS)
        return t.ProviderTraits(generation=generation, traits=traits)

    def set_provider_traits(self, uuid: str, generation: int, traits: frozenset[str]) -> int:
        return self._put_set(uuid, "traits", Kind.PROVIDER_TRAITS, generation, traits)

    def get_provider_aggregates(self, uuid: str) -> t.ProviderAggregates:
        generation, aggregates = self._get_set(uuid, "aggregates", Kind.AGGREGATES)
        return t.ProviderAggregates(generation=generation, aggregates=aggregates)

    def set_provider_aggregates(
        self, uuid: str, generation: int, aggregates: frozenset[str]
    ) -> int:
        return self._put_set(uuid, "aggregates", Kind.AGGREGATES, generation, aggregates)

    # -- allocations -----------------------------------------------------
    def get_consumer_allocations(self, consumer_uuid: str) -> t.ConsumerAllocations:
        body = self._request("GET", f"/allocations/{consumer_uuid}", Kind.ALLOCATIONS)
        if not body.get("allocations"):
            return t.ConsumerAllocations(consumer_uuid=consumer_uuid, allocations={})
        return t.ConsumerAllocations(
            consumer_uuid=consumer_uuid,
            allocations=_allocations(body["allocations"]),
            generation=body.get("consumer_generation"),
            project_id=body.get("project_id"),
            user_id=body.get("user_id"),
            consumer_type=body.get("consumer_type"),
        )

    def get_provider_allocations(self, uuid: str) -> dict[str, dict[str, int]]:
        body = self._request("GET", f"/resource_providers/{uuid}/allocations", Kind.PROVIDER)
        return _allocations(body["allocations"])

    def write_allocations(self, writes: Sequence[t.AllocationWrite]) -> None:
        # Always POST /allocations, even for one consumer: one request shape,
        # one set of semantics (all or nothing, empty means remove).
        writes = [w for w in writes if not self._nothing_to_write(w)]
        if not writes:
            return
        body = {
            w.consumer_uuid: {
                "allocations": _allocations_body(w.allocations),
                "project_id": w.project_id,
                "user_id": w.user_id,
                "consumer_generation": w.consumer_generation,
                "consumer_type": w.consumer_type,
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

    def delete_allocations(self, consumer_uuid: str) -> None:
        # Placement's DELETE /allocations/{consumer} leaves the providers'
        # generations alone, while the contract (and the tracker's heal,
        # which re-reads allocations only when a root generation moved) wants
        # every allocation change to bump them. So: an empty write at the
        # consumer's current generation, re-read when someone else wrote.
        def attempt() -> None:
            held = self.get_consumer_allocations(consumer_uuid)
            if not held.allocations:
                return
            self.write_allocations([t.AllocationWrite(
                consumer_uuid=consumer_uuid, allocations={},
                project_id=held.project_id or "", user_id=held.user_id or "",
                consumer_generation=held.generation,
                consumer_type=held.consumer_type or "INSTANCE",
            )])

        retry.on_conflict(attempt, self.conf.placement.conflict_retries,
                          f"delete allocations of consumer {consumer_uuid}")

    # -- usages and candidates -------------------------------------------
    def get_provider_usages(self, uuid: str) -> dict[str, int]:
        body = self._request("GET", f"/resource_providers/{uuid}/usages", Kind.PROVIDER)
        return dict(sorted(body["usages"].items()))

    def get_project_usages(self, project_id: str, user_id: str | None = None) -> dict[str, int]:
        params = [("project_id", project_id), ("consumer_type", "all")]
        if user_id is not None:
            params.append(("user_id", user_id))
        body = self._request("GET", "/usages", Kind.QUERY, params=params)
        # 1.38 groups usages by consumer type; "all" is the sum of them.
        usages = body["usages"].get("all", {})
        return {rc: n for rc, n in usages.items() if rc != "consumer_count"}

    def get_allocation_candidates(self, query: t.CandidateQuery) -> t.AllocationCandidates:
        params = _query_params(query.required_traits, query.forbidden_traits, query.member_of,
                               query.in_tree, query.resources)
        if query.limit is not None:
            params.append(("limit", str(query.limit)))
        body = self._request("GET", "/allocation_candidates", Kind.QUERY, params=params)
        requests = tuple(
            t.AllocationRequest(allocations=_allocations(req["allocations"]))
            for req in body["allocation_requests"]
        )
        summaries = {
            rp: t.ProviderSummary(
                uuid=rp,
                root_uuid=summary["root_provider_uuid"],
                parent_uuid=summary.get("parent_provider_uuid"),
                resources={
                    rc: t.ResourceSummary(capacity=r["capacity"], used=r["used"])
                    for rc, r in summary["resources"].items()
                },
                traits=frozenset(summary.get("traits", ())),
            )
            for rp, summary in body["provider_summaries"].items()
        }
        return t.AllocationCandidates(allocation_requests=requests, provider_summaries=summaries)
