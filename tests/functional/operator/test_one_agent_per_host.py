"""A second ``rtf compute run`` of a host refuses to start while the
first runs, naming it; once that one stopped, the next one starts."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

from rtframework import conf as rtconf
from rtframework.cmd import agent_lock


def _wait_for_lock(path: pathlib.Path, pid: int, agent: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip() == str(pid):
            return
        assert agent.poll() is None, agent.stderr.read()
        time.sleep(0.1)
    raise AssertionError("the agent never took its lock")


def test_a_second_agent_of_a_host_refuses_to_start(rtf, ini):
    assert rtf("compute", "update", "--host", "h1")[0] == 0
    path = pathlib.Path(agent_lock._path(rtconf.load([str(ini)]), "h1"))
    agent = subprocess.Popen(
        [sys.executable, "-m", "rtframework.cmd.main", "--config-file", str(ini),
         "compute", "run", "--host", "h1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        _wait_for_lock(path, agent.pid, agent)
        code, _, err = rtf("compute", "run", "--once", "--host", "h1")
        assert code == 1
        assert f"an agent of host h1 runs already on this machine (pid {agent.pid}" in err
        # Another host of the same cloud is not held by it.
        assert rtf("compute", "run", "--once", "--host", "h2")[0] == 0
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.wait(60)
    assert rtf("compute", "run", "--once", "--host", "h1")[0] == 0
