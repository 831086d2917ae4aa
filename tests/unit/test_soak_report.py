"""The soak's picture and report say where the claims were and what went wrong."""

from __future__ import annotations

import base64
import datetime
import re

import pytest

from rtframework import invariants
from rtframework.compute import values as v
from rtframework.placement import types as t
from rtframework.simulate import report, runner
from rtframework.simulate.monitor import HostSample, host_samples

pytest.importorskip("matplotlib", reason="the plot needs the [plot] extra")

NOW = datetime.datetime(2026, 12, 4, tzinfo=datetime.timezone.utc)
SMALL = v.Flavor("small", {"VCPU": 2})


def test_host_samples_count_both_halves_of_a_move_as_moving():
    migration = v.Migration(
        uuid="m1", instance_uuid="i1", migration_type="migration", status="finished",
        source_host="a", source_node="a", dest_host="b", dest_node="b", old_flavor=SMALL,
        new_flavor=SMALL, claim_strategy="migration", created_at=NOW, updated_at=NOW)
    snap = invariants.Snapshot(
        instances={}, migrations={"m1": migration},
        node_roots={("a", "a"): "ra", ("b", "b"): "rb"},
        root_of={"ra": "ra", "rb": "rb", "rb-child": "rb"}, names={},
        inventories={"ra": {"VCPU": t.Inventory(8, allocation_ratio=2.0)},
                     "rb": {"VCPU": t.Inventory(8)},
                     "rb-child": {"CUSTOM_FPGA": t.Inventory(1)}},
        usages={"ra": {"VCPU": 5}, "rb": {"VCPU": 2}, "rb-child": {"CUSTOM_FPGA": 1}},
        held={"m1": {"ra": {"VCPU": 2}}, "i1": {"rb": {"VCPU": 2}},
              "other": {"ra": {"VCPU": 3}, "rb-child": {"CUSTOM_FPGA": 1}}})
    assert host_samples(snap) == {
        "a": HostSample(used={"VCPU": 5}, capacity={"VCPU": 16}, moving={"VCPU": 2}),
        "b": HostSample(used={"VCPU": 2, "CUSTOM_FPGA": 1},
                        capacity={"VCPU": 8, "CUSTOM_FPGA": 1}, moving={"VCPU": 2}),
    }


@pytest.fixture
def result():
    r = runner.Result(runner.Options(hosts=3, operations=2), seed=7, started_at=100.0)
    for second in range(5):
        r.observations.timeline.append((100.0 + second, {
            host: HostSample({"VCPU": second}, {"VCPU": 8}, {"VCPU": 1 if host == "a" else 0})
            for host in ("a", "b", "c")}))
    r.kill_marks = [(102.0, "b"), (103.0, "b")]
    found = invariants.Violation("over_capacity", None, "rb", "VCPU 9 > 8")
    r.observations.violations[found] = 1
    r.observations.violation_marks = [(103.5, "b", "over_capacity")]
    return r


def test_one_panel_per_host_with_kills_and_violations_on_their_host(result):
    figure, pyplot = report._figure(result)
    try:
        panels = {ax.get_title(): ax for ax in figure.axes if ax.get_title()}
        assert set(panels) == {"a", "b", "c"}
        red = {host: [line.get_xdata()[0] for line in ax.get_lines()
                      if line.get_color() == "red"] for host, ax in panels.items()}
        assert red == {"a": [], "b": [2.0, 3.0], "c": []}
        crosses = [list(line.get_xdata()) for line in panels["b"].get_lines()
                   if line.get_marker() == "x"]
        assert crosses == [[3.5]]
        assert not any(line.get_marker() == "x" for line in panels["a"].get_lines())
        # The move band: only host a holds anything for a move.
        assert len(panels["a"].collections) == len(report.CLASSES)
    finally:
        pyplot.close(figure)


def test_html_report_is_one_file_with_the_plot_and_the_tables(result, tmp_path):
    path = tmp_path / "soak.html"
    report.html_report(result, str(path))
    page = path.read_text()
    assert "<title>rtf simulate: 1 violations</title>" in page
    (image,) = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert base64.b64decode(image).startswith(b"\x89PNG")
    assert "<h2>Violations</h2>" in page and "VCPU 9 &gt; 8" in page
    assert "<h2>Operations</h2>" in page and "<h2>Summary</h2>" in page
    assert "http" not in page.replace("http-equiv", "")  # nothing fetched from elsewhere
