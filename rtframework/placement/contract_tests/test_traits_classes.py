"""Contract: resource classes, traits and aggregates."""

from __future__ import annotations

import pytest

from rtframework.placement import errors
from rtframework.placement.contract_tests import new_uuid, unique

pytestmark = pytest.mark.placement


def custom(prefix: str) -> str:
    return "CUSTOM_" + unique(prefix).upper().replace("-", "_")


def test_standard_classes_are_listed(backend):
    assert {"VCPU", "MEMORY_MB", "DISK_GB"} <= set(backend.list_resource_classes())


def test_custom_resource_class_lifecycle(backend):
    rc = custom("RC")
    assert rc not in backend.list_resource_classes()
    backend.ensure_resource_class(rc)
    assert rc in backend.list_resource_classes()
    backend.delete_resource_class(rc)
    assert rc not in backend.list_resource_classes()
    with pytest.raises(errors.ResourceClassNotFound):
        backend.delete_resource_class(rc)


def test_bad_resource_class_names(backend):
    with pytest.raises(errors.InvalidResourceClass):
        backend.ensure_resource_class("NOT_CUSTOM")
    with pytest.raises(errors.InvalidResourceClass):
        backend.ensure_resource_class("CUSTOM_lower")
    backend.ensure_resource_class("VCPU")  # standard: a no-op


def test_traits_listed_by_prefix(backend):
    trait = custom("TR")
    backend.ensure_trait(trait)
    backend.ensure_trait(trait)
    assert trait in backend.list_traits()
    assert trait in backend.list_traits(prefix="CUSTOM_")
    hw = backend.list_traits(prefix="HW_CPU_X86_")
    assert "HW_CPU_X86_AVX2" in hw and all(n.startswith("HW_CPU_X86_") for n in hw)


def test_custom_trait_lifecycle(backend):
    trait = custom("TR")
    backend.ensure_trait(trait)
    rp = backend.create_provider(unique())
    backend.set_provider_traits(rp.uuid, 0, frozenset({trait}))
    with pytest.raises(errors.TraitInUse):
        backend.delete_trait(trait)
    assert trait in backend.list_traits()
    backend.set_provider_traits(rp.uuid, 1, frozenset())
    backend.delete_trait(trait)
    assert trait not in backend.list_traits()
    with pytest.raises(errors.TraitNotFound):
        backend.delete_trait(trait)
    with pytest.raises(errors.InvalidTrait):
        backend.delete_trait("HW_CPU_X86_AVX2")


def test_bad_trait_name(backend):
    with pytest.raises(errors.InvalidTrait):
        backend.ensure_trait("NOT_A_TRAIT_" + unique().upper().replace("-", "_"))


def test_provider_traits_replace_and_bump(backend):
    trait = custom("TR")
    backend.ensure_trait(trait)
    rp = backend.create_provider(unique())
    gen = backend.set_provider_traits(rp.uuid, 0, frozenset({trait, "HW_CPU_X86_AVX2"}))
    got = backend.get_provider_traits(rp.uuid)
    assert (got.generation, got.traits) == (gen, frozenset({trait, "HW_CPU_X86_AVX2"}))
    gen = backend.set_provider_traits(rp.uuid, gen, frozenset({"HW_CPU_X86_SSE"}))
    assert backend.get_provider_traits(rp.uuid).traits == frozenset({"HW_CPU_X86_SSE"})
    assert backend.get_provider(rp.uuid).generation == gen == 2


def test_unknown_trait_on_provider_changes_nothing(backend):
    rp = backend.create_provider(unique())
    with pytest.raises(errors.TraitNotFound):
        backend.set_provider_traits(rp.uuid, 0, frozenset({custom("NEVER"), "HW_CPU_X86_SSE"}))
    got = backend.get_provider_traits(rp.uuid)
    assert (got.generation, got.traits) == (0, frozenset())


def test_provider_aggregates_replace_and_bump(backend):
    rp = backend.create_provider(unique())
    a1, a2 = new_uuid(), new_uuid()
    gen = backend.set_provider_aggregates(rp.uuid, 0, frozenset({a1, a2}))
    got = backend.get_provider_aggregates(rp.uuid)
    assert (got.generation, got.aggregates) == (gen, frozenset({a1, a2}))
    gen = backend.set_provider_aggregates(rp.uuid, gen, frozenset())
    assert backend.get_provider_aggregates(rp.uuid).aggregates == frozenset()
    assert gen == 2


def test_traits_and_aggregates_of_unknown_provider(backend):
    with pytest.raises(errors.ProviderNotFound):
        backend.get_provider_traits(new_uuid())
    with pytest.raises(errors.ProviderNotFound):
        backend.set_provider_aggregates(new_uuid(), 0, frozenset())


def test_a_custom_trait_is_deleted_only_once_no_provider_has_it(backend, make_provider):
    name = custom("TRAIT")
    backend.ensure_trait(name)
    rp = make_provider({"VCPU": 1}, traits=[name])
    assert name in backend.list_traits(prefix=name, associated=True)
    assert name not in backend.list_traits(prefix=name, associated=False)
    with pytest.raises(errors.TraitInUse):
        backend.delete_trait(name)
    backend.set_provider_traits(rp.uuid, backend.get_provider(rp.uuid).generation, frozenset())
    backend.delete_trait(name)
    assert backend.list_traits(prefix=name) == []
    with pytest.raises(errors.TraitNotFound):
        backend.delete_trait(name)


def test_renaming_a_custom_class_renames_its_inventory(backend, make_provider):
    old, new = custom("OLD"), custom("NEW")
    backend.ensure_resource_class(old)
    rp = make_provider({old: 4})
    backend.rename_resource_class(old, new)
    assert set(backend.get_inventories(rp.uuid).inventories) == {new}
    assert old not in backend.list_resource_classes()
