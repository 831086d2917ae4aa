"""Every move x every outcome x both claim strategies x both periodic orders,
on a flat cloud and on a nested one (NUMA children, two identical GPUs)
whose disk comes from a shared storage pool.

At every step the allocations of the instance (I) and migration (M)
consumers and the usages of every provider are compared with the
"Allocation states of a move" table of PLACEMENT-FACTS, and that table's
state must be one the reference model (rtframework.reference, written
separately from the same facts) allows for the records; then both hosts'
periodic updates run (source first or destination first) and the same
state must still hold: no heal on either host may undo any of it.

The pool is held once while a move runs (the disk does not move), at the
larger of the two flavors' disks, by the instance: the usage of the pool is
compared too, so a disk counted twice fails at the step that does it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from rtframework import reference, sharing
from rtframework.compute import values as v
from rtframework.moves import delete, errors, evacuate, live, migrate, recovery, resize
from rtframework.placement import types as t

pytestmark = pytest.mark.placement


F_OLD = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}
F_NEW = {"VCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 20}
# The nested cloud: MEMORY_MB on two NUMA children, two identical
# one-VGPU GPU children (one under each), DISK_GB from a storage pool both
# hosts share (none on the hosts); flavors take a VGPU too.
NESTED = {"numa_nodes": 2, "gpus": 2, "vgpus_per_gpu": 1}
POOL = "pool"  # the label of the storage pool in the tables
FLAVORS = {"flat": (F_OLD, F_NEW),
           "nested": ({**F_OLD, "VGPU": 1}, {**F_NEW, "VGPU": 1})}

# Symbolic states of the table.
SOURCE, DURING, DEST, GONE = "source", "during", "dest", "gone"


@dataclass
class Run:
    cloud: object
    kind: str  # migrate, resize, same-host, live, evacuate
    instance: str = ""
    migration: str = ""
    f_old: dict = None  # type: ignore[assignment]
    f_new: dict = None  # type: ignore[assignment]
    pool: str | None = None  # the storage pool's uuid (nested cloud)

    @property
    def ctx(self):
        return self.cloud.ctx

    @property
    def dest_host(self) -> str:
        return "a" if self.kind == "same-host" else "b"


@dataclass(frozen=True)
class Step:
    name: str
    act: Callable[[Run], None]
    expect: str


def _start(run: Run) -> None:
    to = run.cloud.host(run.dest_host)
    if run.kind == "migrate":
        m = migrate.start(run.ctx, run.instance, to_host=to)
    elif run.kind in ("resize", "same-host"):
        m = resize.start(run.ctx, run.instance, v.Flavor("big", run.f_new), to_host=to)
    elif run.kind == "live":
        m = live.start(run.ctx, run.instance, to_host=to)
    else:
        run.cloud.store.set_forced_down(run.cloud.host("a"), True)
        m = evacuate.start(run.ctx, run.instance, to_host=to)
    run.migration = m.uuid


def _migrate(run: Run) -> None:
    resize.migrate(run.ctx, run.migration)


def _finish(run: Run) -> None:
    if run.kind == "evacuate":
        evacuate.rebuild(run.ctx, run.migration)
    else:
        resize.finish(run.ctx, run.migration)


def _confirm(run: Run) -> None:
    assert resize.confirm(run.ctx, run.migration).status == "confirmed"


def _revert(run: Run) -> None:
    assert resize.revert(run.ctx, run.migration).status == "reverted"


def _revert_refused(run: Run) -> None:
    with pytest.raises(errors.AlreadyConfirmed):
        resize.revert(run.ctx, run.migration)


def _rollback(run: Run) -> None:
    resize.rollback(run.ctx, run.migration, reason="test failure")
    assert run.cloud.store.get_migration(run.migration).status == "error"


def _complete(run: Run) -> None:
    assert live.complete(run.ctx, run.migration).status == "done"


def _live_fail(run: Run) -> None:
    assert live.rollback(run.ctx, run.migration).status == "failed"


def _live_abort(run: Run) -> None:
    assert live.rollback(run.ctx, run.migration, abort=True).status == "cancelled"


def _source_returns(run: Run) -> None:
    run.cloud.store.set_forced_down(run.cloud.host("a"), False)
    done = recovery.reconcile(run.ctx, run.cloud.host("a"))
    assert [r.new_status for r in done] == ["done"]


def _delete(run: Run) -> None:
    owner = run.cloud.store.get_instance(run.instance).host
    if run.cloud.store.is_host_up(owner, run.cloud.conf.service_down_time):
        run.cloud.trackers[run.cloud.label(owner)].delete(run.instance)
    else:
        # The owner is down (evacuation): the delete cannot wait for it.
        delete.delete(run.ctx, run.instance)
    assert run.cloud.store.get_migration(run.migration).status == "error"


START = Step("start", _start, DURING)
MIGRATE = Step("migrate", _migrate, DURING)
FINISH = Step("finish", _finish, DURING)
CONFIRM = [Step("confirm", _confirm, DEST), Step("confirm again", _confirm, DEST),
           Step("revert after confirm", _revert_refused, DEST)]
REVERT = [Step("revert", _revert, SOURCE), Step("revert again", _revert, SOURCE)]
ROLLBACK = [Step("rollback", _rollback, SOURCE)]
DELETE = [Step("delete", _delete, GONE)]

COLD_PHASES = [START, MIGRATE, FINISH]
SCENARIOS: dict[str, tuple[str, list[Step]]] = {}
for _kind in ("migrate", "resize", "same-host"):
    SCENARIOS[f"{_kind}-confirm"] = (_kind, COLD_PHASES + CONFIRM)
    SCENARIOS[f"{_kind}-revert"] = (_kind, COLD_PHASES + REVERT)
    SCENARIOS[f"{_kind}-rollback"] = (_kind, [START, MIGRATE] + ROLLBACK)
    for _n in range(1, len(COLD_PHASES) + 1):
        SCENARIOS[f"{_kind}-delete-after-{COLD_PHASES[_n - 1].name}"] = (
            _kind, COLD_PHASES[:_n] + DELETE)
SCENARIOS["live-success"] = ("live", [START, Step("complete", _complete, DEST)])
SCENARIOS["live-failure"] = ("live", [START, Step("fail", _live_fail, SOURCE)])
SCENARIOS["live-abort"] = ("live", [START, Step("abort", _live_abort, SOURCE)])
SCENARIOS["live-delete-while-running"] = ("live", [START] + DELETE)
SCENARIOS["evacuate-source-returns"] = (
    "evacuate", [START, FINISH, Step("source returns", _source_returns, DEST)])
SCENARIOS["evacuate-rollback"] = ("evacuate", [START] + ROLLBACK)
SCENARIOS["evacuate-delete-before-rebuild"] = ("evacuate", [START] + DELETE)
SCENARIOS["evacuate-delete-before-source-returns"] = ("evacuate", [START, FINISH] + DELETE)


def expected(run: Run, symbol: str, strategy: str) -> dict:
    """{"I": {host: {rc: n}}, "M": {...}} for a symbolic state."""
    src, dst, old = "a", run.dest_host, run.f_old
    new = old if run.kind in ("migrate", "live", "evacuate") else run.f_new
    if symbol == GONE:
        return {"I": {}, "M": {}}
    if symbol == SOURCE:
        return {"I": on(run, src, old), "M": {}}
    if symbol == DEST:
        return {"I": on(run, dst, new), "M": {}}
    # The pool, held once at the larger disk by the instance.
    once = {} if run.pool is None else {POOL: {"DISK_GB": max(old["DISK_GB"], new["DISK_GB"])}}
    old_here, new_here = (on(run, host, f).get(host, {}) for host, f in ((src, old), (dst, new)))
    if strategy == "migration" and run.kind != "evacuate":
        return {"I": {dst: new_here, **once}, "M": {src: old_here}}
    if src == dst:
        return {"I": {src: {rc: old_here[rc] + new_here[rc] for rc in old_here}, **once},
                "M": {}}
    return {"I": {src: old_here, dst: new_here, **once}, "M": {}}


def on(run: Run, host: str, flavor: dict) -> dict:
    """A flavor held by a host: its disk on the pool when there is one."""
    if run.pool is None:
        return {host: dict(flavor)}
    return {host: {rc: n for rc, n in flavor.items() if rc != "DISK_GB"},
            POOL: {"DISK_GB": flavor["DISK_GB"]}}


def reference_allows(run: Run, want: dict) -> bool:
    """The reference model allows ``want`` for the records as they are now."""
    store, cloud = run.cloud.store, run.cloud
    pools = () if run.pool is None else (reference.Pool(
        run.pool, frozenset({"DISK_GB"}), frozenset({cloud.root("a"), cloud.root("b")})),)
    instance = store.get_instance(run.instance)
    migration = store.get_migration(run.migration) if run.migration else None
    if migration is not None and not migration.finished:
        allowed = reference.in_move(
            migration.migration_type, migration.claim_strategy, migration.status,
            source_root=cloud.root("a"), dest_root=cloud.root(run.dest_host),
            f_old=migration.old_flavor.resources, f_new=migration.new_flavor.resources,
            instance_deleted=instance.vm_state == v.DELETED, pools=pools)
    else:
        own = cloud.root(cloud.label(instance.host)) if instance.host else None
        allowed = reference.at_rest(instance.vm_state, instance.task_state, own,
                                    instance.flavor.resources, pools)
    i, m = ({run.pool if label == POOL else cloud.root(label): res
             for label, res in want[c].items()} for c in "IM")
    return any(h.matches(reference.add(i), reference.add(m)) for h in allowed)


def usages_of(allocations: dict) -> dict:
    out: dict = {}
    for held in allocations.values():
        for host, resources in held.items():
            for rc, n in resources.items():
                out.setdefault(host, {})[rc] = out.get(host, {}).get(rc, 0) + n
    return out


def snapshot(run: Run) -> dict:
    def labelled(consumer: str) -> dict:
        held = run.cloud.allocations(consumer) if consumer else {}
        return {(POOL if p == run.pool else p): r for p, r in held.items()}

    usages = {host: used for host, used in run.cloud.usages().items() if used}
    if run.pool is not None:
        pooled = {rc: n for rc, n in run.cloud.backend.get_provider_usages(run.pool).items()
                  if n}
        usages.update({POOL: pooled} if pooled else {})
    return {"allocations": {"I": labelled(run.instance), "M": labelled(run.migration)},
            "usages": usages}


# Every move on both clouds, with the source's periodic first and with the
# destination's first (the order in which a heal could take a half it does
# not own).
SHAPES = [("flat", "source-first"), ("flat", "dest-first"),
          ("nested", "source-first"), ("nested", "dest-first")]


@pytest.mark.parametrize("shape,order", SHAPES, ids=[f"{s}-{o}" for s, o in SHAPES])
@pytest.mark.parametrize("strategy", ["doubled", "migration"])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_move(cloud, config, scenario, strategy, order, shape):
    config.config(move_claim_strategy=strategy, group="placement")
    pool = None
    if shape == "nested":
        aggregate = str(uuid.uuid4())
        config.config(group="fake_driver", shared_storage_aggregate=aggregate, **NESTED)
        pool = sharing.ensure_pool(cloud.backend, f"pool-{cloud.suffix}", aggregate,
                                   {"DISK_GB": t.Inventory(total=100)})
    kind, steps = SCENARIOS[scenario]
    cloud.add_host("a")
    cloud.add_host("b")
    run = Run(cloud, kind, f_old=FLAVORS[shape][0], f_new=FLAVORS[shape][1], pool=pool)
    run.instance = cloud.boot("a", run.f_old).uuid
    labels = ["a", "b"] if order == "source-first" else ["b", "a"]

    def check(step_name: str, symbol: str) -> None:
        want_alloc = expected(run, symbol, strategy)
        want = {"allocations": want_alloc, "usages": usages_of(want_alloc)}
        assert reference_allows(run, want_alloc), f"the reference model disagrees after {step_name}"
        assert snapshot(run) == want, f"after {step_name}"
        for label in labels:
            cloud.periodic(label)
        assert snapshot(run) == want, f"after {step_name} and the periodic runs ({order})"
        # Nothing else is off either (orphans, usages, capacity).
        assert cloud.violations() == []

    check("boot", SOURCE)
    for step in steps:
        step.act(run)
        check(step.name, step.expect)
