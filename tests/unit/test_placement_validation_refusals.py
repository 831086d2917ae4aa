"""Every bad request the backend contract refuses, with the message a
caller reads (no database: the rules are pure functions every backend
calls at its entry points)."""

from __future__ import annotations

import math

import pytest

from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement import validation as v

RP = "1111abcd-2222-3333-4444-555555555555"
AGG = "aaaaaaaa-2222-3333-4444-555555555555"
CONSUMER = "cccccccc-2222-3333-4444-555555555555"


def _refused(exc_type, words, call, *args):
    with pytest.raises(exc_type) as exc:
        call(*args)
    assert words in str(exc.value)


# -- inventories -------------------------------------------------------------------
@pytest.mark.parametrize("inv,words", [
    (t.Inventory(total=0), "total 0 < 1"),
    (t.Inventory(total=4, reserved=-1), "reserved -1 < 0"),
    (t.Inventory(total=4, min_unit=0), "min_unit 0 < 1"),
    (t.Inventory(total=4, max_unit=0), "max_unit 0 < 1"),
    (t.Inventory(total=4, min_unit=3, max_unit=2), "min_unit 3 > max_unit 2"),
    (t.Inventory(total=4, step_size=0), "step_size 0 < 1"),
    (t.Inventory(total=4, allocation_ratio=0.0), "allocation_ratio 0.0 must be"),
    (t.Inventory(total=4, allocation_ratio=math.inf), "allocation_ratio inf must be"),
    (t.Inventory(total=4, allocation_ratio=True), "allocation_ratio True must be"),
    (t.Inventory(total=4, allocation_ratio="1.0"), "allocation_ratio '1.0' must be"),
    (t.Inventory(total=4, allocation_ratio=4e38), "<= 3.40282e+38"),
    ({"total": 4}, "not an Inventory: {'total': 4}"),
])
def test_bad_inventory_names_the_field(inv, words):
    _refused(errors.InvalidInventory, words, v.check_inventory, "rp", "VCPU", inv)


def test_inventories_must_be_a_mapping_with_valid_classes():
    _refused(errors.InvalidInventory, "must map class -> Inventory, got [1, 2]",
             v.check_inventories, "rp", [1, 2])
    _refused(errors.InvalidResourceClass, "invalid resource class 'vcpu'",
             v.check_inventories, "rp", {"vcpu": t.Inventory(total=1)})
    good = {"VCPU": t.Inventory(total=2)}
    assert v.check_inventories("rp", good) == good


# -- identifiers -------------------------------------------------------------------
def test_identifiers():
    assert v.normalize_uuid(RP.upper().replace("-", ""), "x") == RP
    _refused(errors.InvalidRequest, "provider uuid 'nope' is not a UUID",
             v.normalize_uuid, "nope", "provider uuid")
    _refused(errors.InvalidRequest, "provider name must be 1 to 200 characters, got ''",
             v.check_provider_name, "")
    _refused(errors.InvalidRequest, "project id must be 1 to 255 characters, got 7",
             v.check_external_id, 7, "project id")
    _refused(errors.InvalidRequest, "consumer type must be upper-case letters",
             v.check_consumer_type, "instance")
    _refused(errors.InvalidRequest, "generation must be an integer >= 0, got -1",
             v.check_generation, -1, "generation")
    v.check_generation(None, "generation", optional=True)
    _refused(errors.InvalidRequest, "got None", v.check_generation, None, "generation")


def test_a_long_value_is_cut_in_the_message():
    with pytest.raises(errors.InvalidRequest) as exc:
        v.check_provider_name("x" * 10_000)
    assert len(str(exc.value)) < 200
    assert "(str, 10000 characters)" in str(exc.value)


# -- allocation writes -------------------------------------------------------------
def _write(**kw):
    fields = dict(consumer_uuid=CONSUMER, allocations={RP: {"VCPU": 1}}, project_id="p",
                  user_id="u", consumer_generation=None)
    fields.update(kw)
    return t.AllocationWrite(**fields)


@pytest.mark.parametrize("write,exc_type,words", [
    ("not a write", errors.InvalidRequest, "not an AllocationWrite: 'not a write'"),
    (_write(consumer_uuid="c1"), errors.InvalidRequest, "consumer uuid 'c1' is not a UUID"),
    (_write(user_id=""), errors.InvalidRequest, f"user id of consumer {CONSUMER}"),
    (_write(consumer_generation=1.5), errors.InvalidRequest,
     f"consumer generation of {CONSUMER} must be an integer >= 0, got 1.5"),
    (_write(allocations=[RP]), errors.InvalidRequest,
     f"allocations of consumer {CONSUMER} must map provider -> class -> amount"),
    (_write(allocations={"rp": {"VCPU": 1}}), errors.InvalidRequest,
     "provider uuid (allocation of consumer"),
    (_write(allocations={RP: {"VCPU": 1}, RP.upper(): {"VCPU": 1}}), errors.InvalidRequest,
     f"provider {RP} is named twice in the allocations of consumer {CONSUMER}"),
    (_write(allocations={RP: 4}), errors.InvalidRequest,
     f"allocation of consumer {CONSUMER} on provider {RP}: resources must map"),
    (_write(allocations={RP: {"VCPU": 0}}), errors.InvalidAllocation,
     "amount of VCPU must be an integer from 1 to"),
    (_write(allocations={RP: {"vcpu": 1}}), errors.InvalidResourceClass, "'vcpu'"),
])
def test_bad_allocation_write(write, exc_type, words):
    _refused(exc_type, words, v.allocation_writes, [write])


def test_one_consumer_twice_in_one_write_and_normalized_uuids():
    _refused(errors.InvalidRequest, f"a consumer is named twice in one write: {CONSUMER}",
             v.allocation_writes, [_write(), _write(consumer_uuid=CONSUMER.upper())])
    (checked,) = v.allocation_writes([_write(allocations={RP.upper(): {"VCPU": 2}, AGG: {}})])
    assert checked.allocations == {RP: {"VCPU": 2}}  # empty resources dropped


# -- provider queries --------------------------------------------------------------
@pytest.mark.parametrize("query,exc_type,words", [
    (t.ProviderQuery(member_of="agg"), errors.InvalidRequest,
     "member_of must be a sequence of sets of aggregate uuids"),
    (t.ProviderQuery(member_of=(frozenset({"agg"}),)), errors.InvalidRequest,
     "aggregate uuid 'agg' is not a UUID"),
    (t.ProviderQuery(required_traits="HW_CPU_X86_AVX"), errors.InvalidRequest,
     "required traits must be a set of trait names"),
    (t.ProviderQuery(forbidden_traits=frozenset({"FAST"})), errors.InvalidTrait, "'FAST'"),
    (t.ProviderQuery(resources=["VCPU"]), errors.InvalidRequest,
     "provider query: resources must map class -> amount"),
    (t.ProviderQuery(resources={"VCPU": True}), errors.InvalidRequest,
     "provider query: amount of VCPU must be an integer from 1 to"),
    (t.ProviderQuery(name=""), errors.InvalidRequest, "provider name must be 1 to 200"),
])
def test_bad_provider_query(query, exc_type, words):
    _refused(exc_type, words, v.provider_query, query)


def test_provider_query_normalizes():
    query = v.provider_query(t.ProviderQuery(uuid=RP.upper(), member_of=[[AGG.upper()]]))
    assert (query.uuid, query.member_of) == (RP, (frozenset({AGG}),))
    assert v.provider_query(None) == t.ProviderQuery()


# -- candidate queries -------------------------------------------------------------
G = t.RequestGroup
NEEDS = {"VCPU": 1}


@pytest.mark.parametrize("query,words", [
    ("resources=VCPU:1", "not a CandidateQuery: 'resources=VCPU:1'"),
    (t.CandidateQuery(resources=NEEDS, limit=0), "limit must be an integer >= 1, got 0"),
    (t.CandidateQuery(resources=NEEDS, groups=[G(NEEDS)]), "groups must map suffix -> "),
    (t.CandidateQuery(groups={"a b": G(NEEDS)}), "request group suffix must be 1 to 64"),
    (t.CandidateQuery(groups={"1": NEEDS}), "request group 1: not a RequestGroup"),
    (t.CandidateQuery(resources=NEEDS, groups={"1": G()}),
     "request group 1 asks for nothing: no resources, traits, aggregates or tree"),
    (t.CandidateQuery(), "an allocation candidate request needs resources"),
    (t.CandidateQuery(in_tree=RP, groups={"1": G(NEEDS)}),
     "the unnumbered group names in_tree, member_of or traits but no resources"),
    (t.CandidateQuery(resources=NEEDS, groups={"1": G(required_traits={"HW_CPU_X86_AVX"})}),
     "request group(s) 1 ask for no resources: such a group must be named in same_subtree"),
    (t.CandidateQuery(groups={"1": G(NEEDS), "2": G(NEEDS)}),
     "group_policy (none or isolate) is required with more than one numbered group"),
    (t.CandidateQuery(resources=NEEDS, group_policy="share"),
     "group_policy must be none or isolate, got 'share'"),
    (t.CandidateQuery(resources=NEEDS, groups={"1": G(NEEDS)}, same_subtree=({"1", "2"},)),
     "same_subtree names request group(s) 2 the request does not have"),
    (t.CandidateQuery(resources=NEEDS, root_required={"HW_CPU_X86_AVX"},
                      root_forbidden={"HW_CPU_X86_AVX"}),
     "root_required both requires and forbids HW_CPU_X86_AVX"),
    (t.CandidateQuery(resources=NEEDS, groups={"1": G(NEEDS, in_tree="tree")}),
     "request group 1 in_tree provider uuid 'tree' is not a UUID"),
])
def test_bad_candidate_query(query, words):
    _refused(errors.InvalidRequest, words, v.candidate_query, query)


def test_aggregates_and_trait_sets():
    _refused(errors.InvalidRequest, "aggregates must be a set of uuids, got 'x'",
             v.aggregates, "x")
    assert v.aggregates([AGG.upper()]) == frozenset({AGG})
    _refused(errors.InvalidRequest, "traits must be a set of trait names, got 5",
             v.trait_set, 5)
    assert v.trait_set(["CUSTOM_X"]) == frozenset({"CUSTOM_X"})
