"""A small REST client of OpenStack Placement, for the differential test.

It reads and writes Placement with plain ``requests`` calls and returns
plain values (tuples, dicts, frozensets), so the differential test compares
the sql backend with what Placement itself answered, not with rtframework's
HTTPBackend. A refused request raises :class:`Refused` with Placement's
status, error code and detail, untranslated: the test decides what error
class of rtframework that answer means.

Every request carries ``OpenStack-API-Version: placement 1.39`` and the
admin token a ``noauth2`` Placement wants.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import requests

MICROVERSION = "placement 1.39"
INVENTORY_FIELDS = ("total", "reserved", "min_unit", "max_unit", "step_size",
                    "allocation_ratio")

# Plain shapes both sides of the comparison are brought to.
Provider = tuple  # (name, generation, parent uuid, root uuid)
Inventory = tuple  # the six INVENTORY_FIELDS, ratio as a float
Consumer = tuple  # (allocations, generation, project, user, consumer type)
NO_CONSUMER: Consumer = ({}, None, None, None, None)


class Refused(Exception):
    """Placement answered with an error status."""

    def __init__(self, status: int, code: str | None, detail: str, what: str) -> None:
        super().__init__(f"{what}: HTTP {status} {code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail


def inventory_tuple(body: Mapping[str, Any]) -> Inventory:
    return tuple(float(body[f]) if f == "allocation_ratio" else body[f]
                 for f in INVENTORY_FIELDS)


def _inventory_body(inv: Inventory) -> dict[str, Any]:
    return dict(zip(INVENTORY_FIELDS, inv, strict=True))


def _allocations(body: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    return {rp: dict(entry["resources"]) for rp, entry in body.items()}


class PlacementREST:
    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.session = requests.Session()
        self.session.headers.update({
            "x-auth-token": "admin",
            "openstack-api-version": MICROVERSION,
            "accept": "application/json",
        })

    def close(self) -> None:
        self.session.close()

    def call(self, method: str, path: str, body: Any = None,
             params: Iterable[tuple[str, str]] | None = None) -> Any:
        resp = self.session.request(method, self.url + path, json=body,
                                    params=list(params or ()), timeout=60)
        if resp.status_code >= 400:
            try:
                error = resp.json()["errors"][0]
                code, detail = error.get("code"), error.get("detail", "")
            except (ValueError, KeyError, IndexError, TypeError):
                code, detail = None, resp.text
            raise Refused(resp.status_code, code, detail, f"{method} {path}")
        return resp.json() if resp.content else None

    # -- reads -------------------------------------------------------------
    def providers(self) -> dict[str, Provider]:
        body = self.call("GET", "/resource_providers")
        return {rp["uuid"]: _provider(rp) for rp in body["resource_providers"]}

    def provider(self, uuid: str) -> Provider:
        return _provider(self.call("GET", f"/resource_providers/{uuid}"))

    def inventories(self, uuid: str) -> tuple[int, dict[str, Inventory]]:
        body = self.call("GET", f"/resource_providers/{uuid}/inventories")
        return body["resource_provider_generation"], {
            rc: inventory_tuple(inv) for rc, inv in body["inventories"].items()}

    def traits(self, uuid: str) -> tuple[int, frozenset[str]]:
        body = self.call("GET", f"/resource_providers/{uuid}/traits")
        return body["resource_provider_generation"], frozenset(body["traits"])

    def aggregates(self, uuid: str) -> tuple[int, frozenset[str]]:
        body = self.call("GET", f"/resource_providers/{uuid}/aggregates")
        return body["resource_provider_generation"], frozenset(body["aggregates"])

    def usages(self, uuid: str) -> dict[str, int]:
        return dict(self.call("GET", f"/resource_providers/{uuid}/usages")["usages"])

    def provider_allocations(self, uuid: str) -> dict[str, dict[str, int]]:
        body = self.call("GET", f"/resource_providers/{uuid}/allocations")
        return _allocations(body["allocations"])

    def consumer(self, uuid: str) -> Consumer:
        body = self.call("GET", f"/allocations/{uuid}")
        if not body["allocations"]:
            return NO_CONSUMER
        return (_allocations(body["allocations"]), body["consumer_generation"],
                body["project_id"], body["user_id"], body["consumer_type"])

    def project_usages(self, project: str, user: str | None = None) -> dict[str, int]:
        params = [("project_id", project), ("consumer_type", "all")]
        if user is not None:
            params.append(("user_id", user))
        usages = self.call("GET", "/usages", params=params)["usages"].get("all", {})
        return {rc: n for rc, n in usages.items() if rc != "consumer_count"}

    def resource_classes(self) -> frozenset[str]:
        body = self.call("GET", "/resource_classes")
        return frozenset(rc["name"] for rc in body["resource_classes"])

    def trait_names(self) -> frozenset[str]:
        return frozenset(self.call("GET", "/traits")["traits"])

    def list_providers(self, params: list[tuple[str, str]]) -> frozenset[str]:
        body = self.call("GET", "/resource_providers", params=params)
        return frozenset(rp["uuid"] for rp in body["resource_providers"])

    def allocation_candidates(self, params: list[tuple[str, str]]):
        """(allocation requests as (provider -> class -> amount, suffix ->
        providers), summaries as provider -> (root, parent, {class:
        (capacity, used)}, traits))."""
        body = self.call("GET", "/allocation_candidates", params=params)
        requests_ = [(_allocations(req["allocations"]),
                      {suffix: tuple(rps) for suffix, rps in req["mappings"].items()})
                     for req in body["allocation_requests"]]
        summaries = {
            rp: (s["root_provider_uuid"], s["parent_provider_uuid"],
                 {rc: (r["capacity"], r["used"]) for rc, r in s["resources"].items()},
                 frozenset(s["traits"]))
            for rp, s in body["provider_summaries"].items()
        }
        return requests_, summaries

    # -- writes ------------------------------------------------------------
    def create_provider(self, name: str, uuid: str, parent: str | None) -> Provider:
        body: dict[str, Any] = {"name": name, "uuid": uuid}
        if parent is not None:
            body["parent_provider_uuid"] = parent
        return _provider(self.call("POST", "/resource_providers", body))

    def update_provider(self, uuid: str, name: str, parent: str | None) -> Provider:
        body: dict[str, Any] = {"name": name}
        if parent is not None:
            body["parent_provider_uuid"] = parent
        return _provider(self.call("PUT", f"/resource_providers/{uuid}", body))

    def delete_provider(self, uuid: str) -> None:
        self.call("DELETE", f"/resource_providers/{uuid}")

    def put_inventories(self, uuid: str, generation: int,
                        inventories: Mapping[str, Inventory]) -> int:
        body = self.call("PUT", f"/resource_providers/{uuid}/inventories", {
            "resource_provider_generation": generation,
            "inventories": {rc: _inventory_body(inv) for rc, inv in inventories.items()}})
        return body["resource_provider_generation"]

    def put_inventory(self, uuid: str, generation: int, rc: str, inv: Inventory) -> int:
        """Change one existing class (Placement's PUT of one class needs it to exist)."""
        body = self.call("PUT", f"/resource_providers/{uuid}/inventories/{rc}", {
            "resource_provider_generation": generation, **_inventory_body(inv)})
        return body["resource_provider_generation"]

    def delete_inventory(self, uuid: str, rc: str) -> None:
        self.call("DELETE", f"/resource_providers/{uuid}/inventories/{rc}")

    def put_traits(self, uuid: str, generation: int, traits: frozenset[str]) -> int:
        body = self.call("PUT", f"/resource_providers/{uuid}/traits", {
            "resource_provider_generation": generation, "traits": sorted(traits)})
        return body["resource_provider_generation"]

    def put_aggregates(self, uuid: str, generation: int, aggregates: frozenset[str]) -> int:
        body = self.call("PUT", f"/resource_providers/{uuid}/aggregates", {
            "resource_provider_generation": generation, "aggregates": sorted(aggregates)})
        return body["resource_provider_generation"]

    def put_resource_class(self, name: str) -> None:
        self.call("PUT", f"/resource_classes/{name}")

    def delete_resource_class(self, name: str) -> None:
        self.call("DELETE", f"/resource_classes/{name}")

    def put_trait(self, name: str) -> None:
        self.call("PUT", f"/traits/{name}")

    def post_allocations(self, consumers: Mapping[str, Consumer]) -> None:
        """consumer -> (allocations, generation expected, project, user, type)."""
        self.call("POST", "/allocations", {
            consumer: {
                "allocations": {rp: {"resources": dict(res)} for rp, res in allocs.items()},
                "consumer_generation": generation, "project_id": project,
                "user_id": user, "consumer_type": consumer_type,
            }
            for consumer, (allocs, generation, project, user, consumer_type)
            in consumers.items()
        })

    def delete_allocations(self, consumer: str) -> None:
        self.call("DELETE", f"/allocations/{consumer}")


def _provider(body: Mapping[str, Any]) -> Provider:
    return (body["name"], body["generation"], body["parent_provider_uuid"],
            body["root_provider_uuid"])
