"""One line per periodic pass: what it read, wrote, healed, found, and how long."""

from __future__ import annotations

import re

LINE = re.compile(r"host (\w+) pass: (\d+) nodes, (\d+) reads, (\d+) writes, (\d+) healed, "
                  r"(\d+) findings, (\d+) errors, \d+ ms")


def _passes(text):
    return [m.groups() for m in LINE.finditer(text)]


def test_compute_update_prints_the_pass_line_beside_the_table(rtf):
    code, out, err = rtf("compute", "update", "--host", "h1", "-f", "json")
    assert code == 0 and out.startswith("[")
    ((host, nodes, reads, writes, healed, findings, errors),) = _passes(err)
    assert (host, nodes, healed, findings, errors) == ("h1", "1", "0", "0", "0")
    assert int(writes) > 0  # the first pass creates the provider
    _, _, err = rtf("compute", "update", "--host", "h1", "-f", "json")
    ((_, _, _, writes, _, _, _),) = _passes(err)
    assert writes == "0"  # nothing changed: nothing written


def test_compute_run_logs_the_pass_line_at_info(rtf):
    rtf("compute", "update", "--host", "h1")
    code, _, err = rtf("-v", "compute", "run", "--once", "--host", "h1")
    assert code == 0
    ((host, nodes, _, writes, healed, findings, errors),) = _passes(err)
    assert (host, nodes, writes, healed, findings, errors) == ("h1", "1", "0", "0", "0", "0")
    code, _, err = rtf("compute", "run", "--once", "--host", "h1")  # not without -v
    assert code == 0 and _passes(err) == []
