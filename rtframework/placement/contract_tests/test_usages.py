"""Contract: usages per provider and per project."""

from __future__ import annotations

import pytest

from rtframework.placement import errors
from rtframework.placement.contract_tests import new_uuid

pytestmark = pytest.mark.placement


def test_provider_usages_list_every_class_in_inventory(backend, make_provider, claim):
    rp = make_provider({"VCPU": 8, "MEMORY_MB": 1024, "DISK_GB": 10})
    claim({rp.uuid: {"VCPU": 2, "MEMORY_MB": 128}})
    claim({rp.uuid: {"VCPU": 1}})
    assert backend.get_provider_usages(rp.uuid) == {"VCPU": 3, "MEMORY_MB": 128, "DISK_GB": 0}


def test_project_and_user_usages(backend, make_provider, claim):
    a, b = make_provider({"VCPU": 8, "MEMORY_MB": 1024}), make_provider({"VCPU": 8})
    project, other = new_uuid(), new_uuid()
    claim({a.uuid: {"VCPU": 2, "MEMORY_MB": 256}, b.uuid: {"VCPU": 1}}, project=project,
          user="alice")
    claim({a.uuid: {"VCPU": 4}}, project=project, user="bob")
    claim({b.uuid: {"VCPU": 5}}, project=other, user="alice")
    assert backend.get_project_usages(project) == {"VCPU": 7, "MEMORY_MB": 256}
    assert backend.get_project_usages(project, user_id="bob") == {"VCPU": 4}
    assert backend.get_project_usages(new_uuid()) == {}


def test_usages_of_unknown_provider(backend):
    with pytest.raises(errors.ProviderNotFound):
        backend.get_provider_usages(new_uuid())
