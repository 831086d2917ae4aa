"""A model-based test of the whole lifecycle with hosts going down and
coming back (issue 20).

Rules boot, delete, start and later advance, confirm or revert moves of
every kind, evacuate, shelve offload and unshelve, run periodic passes on
any host in any order, take hosts down (no heartbeat, or forced down),
bring them back (restart recovery) and restart hosts between the steps of
a move (a kill: the next step never runs, recovery decides). The test's
own model, kept apart from the move and claim code, says which hosts are
down, where each instance may live and with which flavor, and which
operations the preconditions table must refuse.

After every rule, while no host is down, the accounting invariants of
``rtf check`` hold for this run's consumers and providers. At the end
every host comes back and runs its recovery and two periodic passes, the
user confirms what waits for it, and then: every instance holds exactly
its flavor on the node its record names (a place the model allows),
deleted and offloaded instances hold nothing, and no migration is left
unfinished.

Budget: RTF_LIFECYCLE_EXAMPLES x RTF_LIFECYCLE_STEPS (default 6 x 15,
derandomized); ``tox -e lifecycle`` runs a larger one on PostgreSQL and
MariaDB.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from rtframework import instance_recovery, invariants, scheduler
from rtframework.compute import values as v
from rtframework.moves import delete as deleting
from rtframework.moves import errors, evacuate, live, migrate, resize, state
from rtframework.placement import types as t
from rtframework.tracker import TrackerError
from tests.functional.moves.conftest import PROJECT, USER, Cloud

pytestmark = pytest.mark.placement

HOSTS = ("a", "b", "c")
SMALL = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 5}
LARGE = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}
DOWN_TIME = 3600  # a host is down only when the test says so
EXAMPLES = int(os.environ.get("RTF_LIFECYCLE_EXAMPLES", "6"))
STEPS = int(os.environ.get("RTF_LIFECYCLE_STEPS", "15"))
# Set to 0 to report a failure as found, without shrinking it (exploring).
SHRINK = os.environ.get("RTF_LIFECYCLE_SHRINK", "1") != "0"

# Refusals the code may answer with for reasons the model does not track
# (no room, a lost race with recovery): each must change nothing.
REFUSED = (errors.MoveError, TrackerError, scheduler.NoValidHost)


@dataclass
class Expected:
    """What the model allows for one instance."""

    homes: set[str | None]  # host labels the instance may live on (None: offloaded)
    flavors: list[dict[str, int]]
    gone: bool = False
    moves: list[str] = field(default_factory=list)  # migration uuids the test started


class Lifecycle(RuleBasedStateMachine):
    instances = Bundle("instances")

    def __init__(self, conf, backend, store):
        super().__init__()
        self.cloud = Cloud(conf, backend, store)
        for label in HOSTS:
            self.cloud.add_host(label)
        self.down: set[str] = set()
        self.model: dict[str, Expected] = {}
        self.names = 0

    # -- helpers -----------------------------------------------------------
    def host(self, label):
        return self.cloud.host(label)

    def instance(self, uuid):
        return self.cloud.store.get_instance(uuid)

    def rows(self, uuid):
        """The instance's record, its migrations and what everything of it holds."""
        migrations = self.cloud.store.list_migrations(instance_uuid=uuid)
        return (self.instance(uuid), migrations, self.cloud.allocations(uuid),
                {m.uuid: self.cloud.allocations(m.uuid) for m in migrations})

    def attempt(self, uuid, act, must_refuse: str | None = None):
        """Run ``act``; a refusal changes nothing. ``must_refuse``: the
        model knows the preconditions table refuses it (a rule name)."""
        before = self.rows(uuid) if uuid else None
        try:
            result = act()
        except REFUSED as exc:
            if uuid:
                self.left_as_it_was(before, self.rows(uuid), exc)
            if must_refuse is not None and isinstance(exc, errors.PreconditionFailed):
                assert exc.rule == must_refuse, exc
            return None
        assert must_refuse is None, f"accepted what {must_refuse!r} refuses"
        return result

    @staticmethod
    def left_as_it_was(before, after, exc):
        """A refusal by the preconditions table changes nothing at all. A
        move that passed the table and then failed (no destination with
        room) leaves, as Nova does, its new migration record in ``error``
        (``failed`` for a live migration) holding nothing, and the instance
        as it was but for ``updated_at``."""
        if isinstance(exc, errors.PreconditionFailed):
            assert after == before, f"refusal {exc} changed something"
            return
        (instance, migrations, held, by_move), (instance_a, migrations_a, held_a, by_move_a) = \
            before, after
        assert dataclasses.replace(instance_a, updated_at=instance.updated_at) == instance, \
            f"refusal {exc} changed the instance: {instance} -> {instance_a}"
        assert held_a == held, f"refusal {exc} changed what the instance holds"
        old = {m.uuid: m for m in migrations}
        assert {m.uuid: m for m in migrations_a if m.uuid in old} == old, \
            f"refusal {exc} changed a migration"
        for m in migrations_a:
            if m.uuid not in old:
                ended = state.FAILED if m.migration_type == state.LIVE else state.ERROR
                assert m.status == ended and by_move_a[m.uuid] == {}, \
                    f"refusal {exc} left {m} ({m.status}) holding {by_move_a[m.uuid]}"
        assert {k: by_move_a[k] for k in old} == by_move, \
            f"refusal {exc} changed what a migration holds"

    def label(self, host):
        return self.cloud.label(host)

    def live_instances(self, uuid) -> bool:
        return uuid in self.model and not self.model[uuid].gone

    def run_recovery(self, label):
        tracker = self.cloud.trackers[label]
        instance_recovery.recover_host(tracker, self.cloud.ctx)

    # -- hosts ---------------------------------------------------------------
    @rule(label=st.sampled_from(HOSTS), forced=st.booleans())
    def host_goes_down(self, label, forced):
        if forced:
            self.cloud.store.set_forced_down(self.host(label), True)
        else:
            long_ago = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(
                seconds=10 * DOWN_TIME)
            self.cloud.store.heartbeat(self.host(label), at=long_ago)
        self.down.add(label)

    @precondition(lambda self: self.down)
    @rule(data=st.data())
    def host_comes_back(self, data):
        label = data.draw(st.sampled_from(sorted(self.down)))
        self.cloud.store.set_forced_down(self.host(label), False)
        self.cloud.store.heartbeat(self.host(label))
        self.down.discard(label)
        self.run_recovery(label)

    @rule(label=st.sampled_from(HOSTS))
    def host_restarts(self, label):
        """A kill and restart of an up host's agent between two steps."""
        if label not in self.down:
            self.run_recovery(label)

    @rule(label=st.sampled_from(HOSTS))
    def periodic(self, label):
        if label not in self.down:
            self.cloud.periodic(label)

    # -- instances -------------------------------------------------------------
    @rule(target=instances, label=st.sampled_from(HOSTS), large=st.booleans())
    def boot(self, label, large):
        flavor = LARGE if large else SMALL
        self.names += 1
        must = "destination up" if label in self.down else None
        try:
            vm = self.cloud.trackers[label].boot(
                f"vm{self.names}", v.Flavor("large" if large else "small", flavor),
                project_id=PROJECT, user_id=USER)
        except REFUSED as exc:
            if must:
                assert isinstance(exc, errors.PreconditionFailed) and exc.rule == must, exc
            return "none"
        assert must is None, "a boot on a down host was accepted"
        self.model[vm.uuid] = Expected({label}, [flavor])
        return vm.uuid

    @rule(uuid=consumes(instances))
    def delete(self, uuid):
        if not self.live_instances(uuid):
            return
        deleting.delete(self.cloud.ctx, uuid)
        self.model[uuid].gone = True

    def _move_refusal(self, instance, dest_label, source_must, vm_states=(v.ACTIVE,)):
        """The rule the model expects to refuse a move, or None."""
        if instance.task_state is not None or instance.vm_state not in vm_states:
            return "skip"
        source = self.label(instance.host)
        if source_must == "up" and source in self.down:
            return "source up"
        if source_must == "down" and source not in self.down:
            return "source down"
        if dest_label is not None and dest_label in self.down and dest_label != source:
            return "destination up"
        return None

    @rule(uuid=instances, dest=st.sampled_from((None, *HOSTS)),
          kind=st.sampled_from(["migrate", "resize", "live"]), finish=st.booleans())
    def start_move(self, uuid, dest, kind, finish):
        if not self.live_instances(uuid):
            return
        instance = self.instance(uuid)
        must = self._move_refusal(instance, dest, "up")
        if must == "skip":
            return
        if must is None and dest == self.label(instance.host) and kind != "resize":
            must = "destination not current host"
        if must in ("destination up",) and kind == "resize" and dest == self.label(
                instance.host):
            must = None
        to_host = self.host(dest) if dest else None
        expected = self.model[uuid]
        new = LARGE if instance.flavor.resources == SMALL else SMALL

        def act():
            if kind == "migrate":
                start = migrate.start(self.cloud.ctx, uuid, to_host=to_host)
            elif kind == "resize":
                start = resize.start(self.cloud.ctx, uuid, v.Flavor("other", new),
                                     to_host=to_host)
            else:
                start = live.start(self.cloud.ctx, uuid, to_host=to_host)
            if finish and kind != "live":
                resize.migrate(self.cloud.ctx, start.uuid)
                return resize.finish(self.cloud.ctx, start.uuid)
            if finish:
                return live.complete(self.cloud.ctx, start.uuid)
            return start

        migration = self.attempt(uuid, act, must)
        if migration is not None:
            expected.homes.add(self.label(migration.dest_host))
            if kind == "resize":
                expected.flavors.append(new)
            expected.moves.append(migration.uuid)

    @rule(uuid=instances, data=st.data())
    def advance_move(self, uuid, data):
        """The next step of a move this test started (or its end)."""
        if not self.live_instances(uuid):
            return
        unfinished = [m for m in self.cloud.store.list_migrations(
            instance_uuid=uuid, statuses=v.UNFINISHED_MIGRATION_STATUSES)]
        if not unfinished:
            return
        migration = data.draw(st.sampled_from(unfinished))
        ctx = self.cloud.ctx
        steps = {
            ("migration", "pre-migrating"): [resize.migrate],
            ("resize", "pre-migrating"): [resize.migrate],
            ("migration", "migrating"): [resize.finish],
            ("resize", "migrating"): [resize.finish],
            ("migration", "finished"): [resize.confirm, resize.revert],
            ("resize", "finished"): [resize.confirm, resize.revert],
            ("live-migration", "running"): [
                live.complete, lambda c, m: live.rollback(c, m),
                lambda c, m: live.rollback(c, m, abort=True)],
        }.get((migration.migration_type, migration.status), [])
        if not steps:
            return
        step = data.draw(st.sampled_from(steps))
        self.attempt(uuid, lambda: step(ctx, migration.uuid))

    @rule(uuid=instances, dest=st.sampled_from((None, *HOSTS)))
    def evacuate(self, uuid, dest):
        if not self.live_instances(uuid):
            return
        instance = self.instance(uuid)
        must = self._move_refusal(instance, dest, "down", (v.ACTIVE, v.ERROR))
        if must == "skip":
            return
        if must is None and dest is not None and dest == self.label(instance.host):
            must = "destination not current host"
        to_host = self.host(dest) if dest else None
        migration = self.attempt(uuid, lambda: evacuate.evacuate(self.cloud.ctx, uuid,
                                                                 to_host=to_host), must)
        if migration is not None:
            self.model[uuid].homes.add(self.label(migration.dest_host))
            self.model[uuid].moves.append(migration.uuid)

    @rule(uuid=instances)
    def shelve_offload(self, uuid):
        if not self.live_instances(uuid):
            return
        instance = self.instance(uuid)
        if instance.host is None:
            return
        label = self.label(instance.host)
        must = None
        if instance.vm_state == v.ACTIVE and instance.task_state is None and label in self.down:
            must = "source up"
        done = self.attempt(uuid, lambda: self.cloud.trackers[label].shelve_offload(uuid), must)
        if done is not None:
            self.model[uuid].homes.add(None)

    @rule(uuid=instances, label=st.sampled_from(HOSTS))
    def unshelve(self, uuid, label):
        if not self.live_instances(uuid):
            return
        instance = self.instance(uuid)
        must = None
        if instance.vm_state == v.SHELVED_OFFLOADED and instance.task_state is None \
                and label in self.down:
            must = "destination up"
        done = self.attempt(uuid, lambda: self.cloud.trackers[label].unshelve(uuid), must)
        if done is not None:
            self.model[uuid].homes.add(label)

    # -- what must hold --------------------------------------------------------
    def violations(self):
        snap = invariants.take_snapshot(self.cloud.backend, self.cloud.store)
        ours = set(self.model)
        for uuid in self.model:
            ours |= {m.uuid for m in self.cloud.store.list_migrations(instance_uuid=uuid)}
        roots = {self.cloud.root(label) for label in HOSTS}
        return [f for f in invariants.check_snapshot(snap, stale_after=10 * DOWN_TIME)
                if f.consumer_uuid in ours or (f.consumer_uuid is None
                                               and f.provider_uuid in roots)]

    @invariant()
    def accounting_holds_while_no_host_is_down(self):
        if not self.down:
            found = self.violations()
            assert found == [], "\n".join(map(str, found))

    def converge(self):
        """Every host back, recovery and two passes each, the user confirms."""
        for label in sorted(self.down):
            self.cloud.store.set_forced_down(self.host(label), False)
            self.cloud.store.heartbeat(self.host(label))
        self.down.clear()
        for label in HOSTS:
            self.run_recovery(label)
        for uuid in self.model:
            for m in self.cloud.store.list_migrations(
                    instance_uuid=uuid, statuses=v.UNFINISHED_MIGRATION_STATUSES):
                if m.migration_type in ("migration", "resize") and m.status == "finished":
                    resize.confirm(self.cloud.ctx, m.uuid)
        for _ in range(2):
            for label in HOSTS:
                self.cloud.periodic(label)
        found = self.violations()
        assert found == [], "\n".join(map(str, found))
        for uuid, expected in self.model.items():
            instance = self.instance(uuid)
            held = self.cloud.allocations(uuid)
            assert self.cloud.store.list_migrations(
                instance_uuid=uuid, statuses=v.UNFINISHED_MIGRATION_STATUSES) == []
            for m in self.cloud.store.list_migrations(instance_uuid=uuid):
                assert self.cloud.allocations(m.uuid) == {}, m
            if expected.gone or instance.vm_state in (v.DELETED, v.SHELVED_OFFLOADED):
                assert held == {}, (instance, held)
                assert instance.vm_state == v.DELETED or not expected.gone
                if instance.vm_state == v.SHELVED_OFFLOADED:
                    assert None in expected.homes
                continue
            if instance.vm_state == v.ERROR and held == {}:
                continue  # a failed operation that released its claim
            label = self.label(instance.host)
            assert label in expected.homes, (instance, expected)
            assert dict(instance.flavor.resources) in expected.flavors
            assert held == {label: dict(instance.flavor.resources)}, (instance, held)
            assert uuid in self.cloud.running(label)

    def forget_hosts(self):
        """Take this example's hosts out of placement and the compute
        records once they hold nothing: the next example has hosts of its
        own, and each snapshot then reads three trees, not every tree of
        every example before it."""
        backend = self.cloud.backend
        for label in HOSTS:
            root = self.cloud.root(label)
            tree = {p.uuid: p for p in backend.list_providers(t.ProviderQuery(in_tree=root))}

            def depth(uuid, tree=tree):
                parent = tree[uuid].parent_uuid
                return 0 if parent not in tree else 1 + depth(parent)

            for uuid in sorted(tree, key=depth, reverse=True):
                backend.delete_provider(uuid)
            self.cloud.store.delete_compute_node(root)

    def teardown(self):
        try:
            self.converge()
        finally:
            for uuid, expected in self.model.items():
                if not expected.gone and self.instance(uuid).vm_state != v.DELETED:
                    deleting.delete(self.cloud.ctx, uuid)
        self.forget_hosts()


@pytest.mark.parametrize("strategy", ["doubled", "migration"])
def test_lifecycle_with_hosts_going_down_and_coming_back(cloud, config, strategy):
    config.config(move_claim_strategy=strategy, group="placement")
    config.config(service_down_time=DOWN_TIME)
    run_state_machine_as_test(
        lambda: Lifecycle(cloud.conf, cloud.backend, cloud.store),
        settings=settings(max_examples=EXAMPLES, stateful_step_count=STEPS,
                          deadline=None, derandomize=True, database=None,
                          phases=tuple(Phase) if SHRINK else (Phase.generate,),
                          suppress_health_check=list(HealthCheck)),
    )
