"""Generated values, many of them malformed, fed to the backend API and to
``rtf boot``: either a typed error with a one-line message and nothing
changed, or success and every accounting invariant still holds."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtframework.placement import errors
from rtframework.placement import types as t
from tests.functional.bad_input.conftest import one_line

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])
CONSUMERS = ["5a0f3c2e-7b1d-4e6a-9c8b-1d2e3f4a5b6c", "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"]
PROVIDER = "1f2e3d4c-5b6a-4789-8abc-def012345678"
texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",),
                                       blacklist_characters="\x00"), max_size=300)
consumers = st.one_of(
    st.sampled_from(CONSUMERS),
    st.sampled_from(CONSUMERS).map(str.upper),
    st.sampled_from(CONSUMERS).map(lambda u: "{" + u + "}"),
    st.sampled_from(CONSUMERS).map(lambda u: u.replace("-", "")),
    texts,
)
classes = st.sampled_from(["VCPU", "MEMORY_MB", "DISK_GB", "vcpu", "CUSTOM_NOPE", ""])
amounts = st.one_of(st.integers(-2, 12), st.integers(2**31 - 2, 2**40), st.floats(),
                    st.booleans(), st.text(max_size=3))
ids = st.one_of(st.just("p"), texts)
generations = st.one_of(st.none(), st.integers(-1, 4), st.text(max_size=2))


@st.composite
def writes(draw):
    provider = draw(st.one_of(st.just(PROVIDER), st.just(PROVIDER.upper()), texts))
    resources = draw(st.dictionaries(classes, amounts, max_size=3))
    return t.AllocationWrite(
        consumer_uuid=draw(consumers),
        allocations=draw(st.one_of(st.just({}), st.just({provider: resources}))),
        project_id=draw(ids), user_id=draw(ids),
        consumer_generation=draw(generations),
        consumer_type=draw(st.one_of(st.just("INSTANCE"), texts)),
    )


def _state(backend):
    return (backend.get_inventories(PROVIDER), backend.get_provider_allocations(PROVIDER),
            [backend.get_consumer_allocations(c) for c in CONSUMERS])


def _assert_invariants(backend):
    inventories = backend.get_inventories(PROVIDER).inventories
    held = backend.get_provider_allocations(PROVIDER)
    usages = backend.get_provider_usages(PROVIDER)
    for rc, inv in inventories.items():
        total = sum(per.get(rc, 0) for per in held.values())
        assert usages[rc] == total
        assert total <= inv.capacity
    for consumer in CONSUMERS:
        mine = backend.get_consumer_allocations(consumer)
        assert (mine.generation is None) == (not mine.allocations)


@pytest.fixture
def fuzzed_backend(sql_backend):
    sql_backend.create_provider("fuzz", uuid=PROVIDER)
    sql_backend.set_inventories(PROVIDER, 0, {
        "VCPU": t.Inventory(total=8, max_unit=4),
        "MEMORY_MB": t.Inventory(total=1024, step_size=2)})
    return sql_backend


@SETTINGS
@given(batch=st.lists(writes(), min_size=1, max_size=2))
def test_backend_writes_of_generated_values(fuzzed_backend, batch):
    backend = fuzzed_backend
    before = _state(backend)
    try:
        backend.write_allocations(batch)
    except errors.PlacementError as exc:
        assert str(exc).strip() and "\n" not in str(exc)
        assert _state(backend) == before
    _assert_invariants(backend)


names = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=280)


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(name=names, rc=classes, amount=st.one_of(st.integers(-1, 6), st.text(max_size=4)),
       project=st.one_of(st.just("demo"), names))
def test_boot_with_generated_arguments(cloud, name, rc, amount, project):
    before = cloud.rows()
    code, out, err = cloud.rtf("boot", name, "--resources", f"{rc}={amount}",
                               "--project", project)
    if code == 0:
        check, _, check_err = cloud.rtf("check", "--recheck-delay", "-1")
        assert check == 0, check_err
    else:
        assert code in (1, 2), err
        if err.startswith("usage:"):  # argparse: the usage, then one line naming the argument
            assert err.strip().splitlines()[-1].startswith("rtf boot: error: argument ")
        else:
            one_line(err)
        assert cloud.rows() == before
