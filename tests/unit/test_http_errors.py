"""Placement error responses become the typed error of the problem."""

from __future__ import annotations

import pytest

from rtframework.placement import errors
from rtframework.placement.httperrors import Kind, detail_of, error_for

RP = "7247b341-967b-4fe3-b81b-9e6f76633b14"
CONCURRENT = "placement.concurrent_update"
UNDEFINED = "placement.undefined_code"

# (status, code, detail as Placement 16.0.0 words it, request kind) -> error
CASES = [
    (409, CONCURRENT, "consumer generation conflict - expected 1 but got 0", Kind.ALLOCATIONS,
     errors.ConsumerGenerationConflict),
    (409, CONCURRENT, "consumer generation conflict - expected null but got 3",
     Kind.ALLOCATIONS, errors.ConsumerGenerationConflict),
    (409, CONCURRENT, "Another thread concurrently updated the resource provider data.",
     Kind.ALLOCATIONS, errors.ProviderGenerationConflict),
    (409, CONCURRENT, "resource provider generation conflict", Kind.INVENTORY,
     errors.ProviderGenerationConflict),
    (409, CONCURRENT, "Resource provider's generation already changed.", Kind.PROVIDER_TRAITS,
     errors.ProviderGenerationConflict),
    (409, "placement.inventory.inuse", f"Inventory for 'VCPU' on resource provider '{RP}' in use.",
     Kind.INVENTORY, errors.InventoryInUse),
    (409, "placement.resource_provider.inuse", "Resource provider has allocations.",
     Kind.PROVIDER, errors.ProviderInUse),
    (409, "placement.resource_provider.cannot_delete_parent",
     f"Unable to delete parent resource provider {RP}: It has child resource providers.",
     Kind.PROVIDER, errors.CannotDeleteParent),
    (409, "placement.duplicate_name", "Conflicting resource provider name: rp-1 already exists.",
     Kind.PROVIDER, errors.DuplicateName),
    (409, "placement.duplicate_name", f"Conflicting resource provider uuid: {RP} already exists.",
     Kind.PROVIDER, errors.DuplicateUUID),
    (409, UNDEFINED, f"Unable to allocate inventory: Unable to create allocation for 'VCPU' on "
     f"resource provider '{RP}'. The requested amount would exceed the capacity.",
     Kind.ALLOCATIONS, errors.CapacityExceeded),
    (409, UNDEFINED, f"Unable to allocate inventory: Unable to create allocation for 'VCPU' on "
     f"resource provider '{RP}'. The requested amount would violate inventory constraints.",
     Kind.ALLOCATIONS, errors.InvalidAllocation),
    (409, UNDEFINED, f"Unable to allocate inventory: Inventory for 'DISK_GB' on resource "
     f"provider '{RP}' invalid.", Kind.ALLOCATIONS, errors.InvalidAllocation),
    (409, UNDEFINED, "Error in delete resource class: Cannot delete resource class CUSTOM_X. "
     "Class is in use in inventory.", Kind.RESOURCE_CLASS, errors.ResourceClassInUse),
    (404, UNDEFINED, f"No resource provider with uuid {RP} found", Kind.INVENTORY,
     errors.ProviderNotFound),
    (404, UNDEFINED, "No such resource class CUSTOM_GONE.", Kind.RESOURCE_CLASS,
     errors.ResourceClassNotFound),
    (400, UNDEFINED, "No such trait CUSTOM_NEVER", Kind.PROVIDER_TRAITS, errors.TraitNotFound),
    (400, UNDEFINED, "The trait is invalid.", Kind.TRAIT, errors.InvalidTrait),
    (400, UNDEFINED, "JSON does not validate: 'lower' does not match '^CUSTOM_[A-Z0-9_]+$'",
     Kind.RESOURCE_CLASS, errors.InvalidResourceClass),
    (400, UNDEFINED, f"Unknown resource class in inventory for resource provider {RP}: No such "
     f"resource class CUSTOM_NOPE.", Kind.INVENTORY, errors.ResourceClassNotFound),
    (400, UNDEFINED, "JSON does not validate: 0 is less than the minimum of 1",
     Kind.INVENTORY, errors.InvalidInventory),
    (400, UNDEFINED, f"Allocation for resource provider '{RP}' that does not exist.",
     Kind.ALLOCATIONS, errors.ProviderNotFound),
    (400, UNDEFINED, "Unable to create resource provider \"x\", 1: parent provider UUID does "
     "not exist.", Kind.PROVIDER, errors.ProviderNotFound),
    (400, UNDEFINED, "No such trait(s): CUSTOM_X.", Kind.QUERY, errors.TraitNotFound),
    (400, UNDEFINED, "Invalid resource class in resources parameter: No such resource class "
     "CUSTOM_Y.", Kind.QUERY, errors.ResourceClassNotFound),
    (400, UNDEFINED, "Invalid query string parameters", Kind.QUERY, errors.InvalidRequest),
    (503, None, "Service Unavailable", Kind.QUERY, errors.BackendUnavailable),
]


@pytest.mark.parametrize(("status", "code", "detail", "kind", "expected"), CASES,
                         ids=[f"{c[0]}-{c[4].__name__}-{i}" for i, c in enumerate(CASES)])
def test_placement_errors_map_to_typed_errors(status, code, detail, kind, expected):
    error = error_for(status, code, detail, kind, "PUT /x")
    assert type(error) is expected
    assert detail in str(error) and str(error).startswith("PUT /x: ")


def test_detail_keeps_placements_words_without_webobs_preamble():
    body = {"errors": [{
        "status": 409, "code": CONCURRENT, "title": "Conflict",
        "detail": "There was a conflict when trying to complete your request.\n\n "
                  "consumer generation conflict - expected 1 but got 0  ",
    }]}
    assert detail_of(body, "fallback") == (
        CONCURRENT, "consumer generation conflict - expected 1 but got 0")


def test_a_body_that_is_not_placements_falls_back_to_the_text():
    assert detail_of("<html>bad gateway</html>", "Bad Gateway") == (None, "Bad Gateway")
    assert detail_of({"errors": []}, "Bad Gateway") == (None, "Bad Gateway")
