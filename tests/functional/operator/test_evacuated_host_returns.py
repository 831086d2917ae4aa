"""An evacuated host whose agent kept running (cut off, then back; or
forced down by an operator and up again) removes its half of the
evacuation at its next pass, as a restarted agent does; meanwhile a
refused move says which of the two it waits for."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tests.functional.operator.conftest import as_json

_json = as_json


def _held_on(rtf, instance):
    return sorted(a["Provider name"] for a in _json(rtf, "allocations", "show", instance)
                  if a["Resource class"] == "VCPU")


def test_a_running_agent_of_an_evacuated_host_removes_its_half(rtf, ini):
    ini.write_text(ini.read_text() + "[DEFAULT]\nupdate_resources_interval = 1\n")
    for host in ("h1", "h2"):
        _json(rtf, "compute", "update", "--host", host)
    _json(rtf, "boot", "web", "--host", "h1", "--flavor-vcpus", "1")
    agent = subprocess.Popen(
        [sys.executable, "-m", "rtframework.cmd.main", "--config-file", str(ini),
         "compute", "run", "--host", "h1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        # Started: its start's recovery is done (that one would remove the
        # half too), its periodic passes run.
        for line in agent.stderr:
            if "compute agent of host h1: update every" in line:
                break
        assert rtf("compute-services", "set", "h1", "--down")[0] == 0
        moved = _json(rtf, "evacuate", "web", "--to", "h2")
        assert _held_on(rtf, "web") == ["h1", "h2"]
        code, _, err = rtf("migrate", "web")
        assert code == 1
        assert "it waits for host 'h1' to come back and remove its half (forced down)" in err
        time.sleep(2)  # passes of the forced-down agent leave the half alone
        assert _held_on(rtf, "web") == ["h1", "h2"]

        assert rtf("compute-services", "set", "h1", "--up")[0] == 0
        code, _, err = rtf("migrate", "web")
        if code == 1:  # unless the agent's pass was quicker
            assert "host 'h1' is up again and its agent removes its half at its next pass" \
                in err
        deadline = time.monotonic() + 60
        while _held_on(rtf, "web") != ["h2"] and time.monotonic() < deadline:
            assert agent.poll() is None
            time.sleep(0.2)
        assert _held_on(rtf, "web") == ["h2"]
        assert _json(rtf, "migrations", "show", moved["UUID"])["Status"] == "done"
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.wait(60)
