"""Evacuations chosen for a host outage in the chaos soak."""

from __future__ import annotations

import datetime
import random

from rtframework.compute import values as v
from rtframework.simulate import ops
from rtframework.simulate.options import Options, Result
from rtframework.simulate.outages import Outages

_NOW = datetime.datetime(2026, 1, 1)


class _Records:
    """The one store call outages make: every host counts as down."""

    def is_host_up(self, host: str, down_after: float) -> bool:
        return False


def _instance(uuid: str, host: str) -> v.Instance:
    return v.Instance(uuid=uuid, name=uuid, project_id="p", user_id="u",
                      flavor=ops.FLAVORS[0], host=host, node=host, vm_state=v.ACTIVE,
                      task_state=None, created_at=_NOW, updated_at=_NOW)


_HOSTS = ["h1", "h2", "h3"]


def test_an_instance_is_not_given_up_while_no_destination_is_up():
    options = Options(hosts=3, chaos=True, outage_rate=1.0)
    stopped: list[str] = []
    out = Outages(options, _Records(), random.Random(1), Result(options, 1),
                  stop_host=stopped.append, restart_host=lambda host: None)
    assert out.update(ops.View(hosts=_HOSTS, instances=[], migrations=[]))
    [host] = stopped
    vm = _instance("vm1", host)
    others = [h for h in _HOSTS if h != host]
    nowhere = ops.View(hosts=_HOSTS, instances=[vm], migrations=[], down=frozenset(others))
    assert out.evacuation(1, nowhere) is None
    # A destination comes up: the same instance is still evacuated.
    somewhere = ops.View(hosts=_HOSTS, instances=[vm], migrations=[],
                         down=frozenset(others[1:]))
    op = out.evacuation(2, somewhere)
    assert (op.kind, op.executor, op.instance, op.target) == (
        ops.OUTAGE_EVACUATE, others[0], "vm1", host)
    # Tried once, it is not chosen again.
    assert out.evacuation(3, somewhere) is None
