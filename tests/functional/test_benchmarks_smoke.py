"""`python -m benchmarks --quick` end to end: the table and the JSON keep
their shape, so the benchmark code cannot rot. No timing is asserted."""

from __future__ import annotations

import glob
import json
import re

import pytest

from benchmarks import __main__ as bench
from benchmarks import environment

# The run makes its own SQLite databases; it starts Placement when installed.
pytestmark = [pytest.mark.sqlite_only, pytest.mark.slow]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench")
    results = tmp / "results"
    code = bench.main(["--quick", "--engines", "sqlite", "--work-dir", str(tmp),
                       "--results-dir", str(results)])
    (path,) = glob.glob(str(results / "*.json"))
    with open(path) as f:
        return code, json.load(f)


def test_smallest_run_succeeds_and_writes_one_json_document(run):
    code, document = run
    assert code == 0, [n for n in document["notes"] if "FAILED" in n]
    assert set(document) >= {"started", "options", "machine", "figures", "verdicts", "notes"}
    assert document["options"]["engines"] == ["sqlite"]


def test_every_benchmark_reports_figures(run):
    _code, document = run
    benches = {f["bench"] for f in document["figures"]}
    assert benches == {"claims", "candidates", "periodic", "memory", "growth", "claims_race",
                       "scale", "machine"}
    for figure in document["figures"]:
        assert set(figure) == {"bench", "engine", "case", "value", "unit", "detail", "low",
                               "high"}
        assert isinstance(figure["value"], (int, float))


def test_the_machine_is_timed_at_the_start_and_the_end(run):
    """A reader compares runs by the work unit (see benchmarks/machine.py)."""
    _code, document = run
    timed = [f for f in document["figures"] if f["bench"] == "machine"]
    assert [f["case"] for f in timed] == ["python work unit, at start",
                                          "python work unit, at end"]
    assert all(0 < f["low"] <= f["value"] <= f["high"] for f in timed)
    assert "cpu" in document["machine"]
    assert document["ended"] >= document["started"]


def test_placement_is_compared_exactly_when_it_is_installed(run):
    _code, document = run
    cases = {f["case"] for f in document["figures"]}
    installed = environment.placement_available()
    assert document["options"]["placement"] is installed
    assert ("K=1 placement" in cases) is installed
    assert ("K=1 sql/placement" in cases) is installed
    assert {"K=1 sql", "K=1 raw", "K=1 sql/raw"} <= cases


def test_quiet_periodic_pass_is_counted_as_one_read_and_no_write(run):
    _code, document = run
    by_case = {f["case"]: f["value"] for f in document["figures"] if f["bench"] == "periodic"}
    assert by_case["3 nothing changed reads"] == 1
    assert by_case["3 nothing changed writes"] == 0
    assert by_case["3 one changed reads"] > 1


def test_verdicts_are_pass_or_miss_with_what_was_measured(run):
    _code, document = run
    assert document["verdicts"]
    for verdict in document["verdicts"]:
        assert verdict["verdict"] in ("PASS", "MISS")
        assert verdict["verdict"] == ("PASS" if verdict["passed"] else "MISS")
        assert verdict["measured"]


def test_table_names_each_benchmark_and_the_targets(run):
    report = bench.Report()
    from benchmarks.results import Figure, Verdict

    report.figures.append(Figure("claims", "sqlite", "K=1 sql", 12.345, "cycles/s"))
    report.verdicts.append(Verdict("claims", "sqlite", "a target", "1.0x", False))
    table = bench.render(report)
    assert "claims" in table and "K=1 sql" in table and "12.3" in table
    assert "targets" in table and "MISS" in table


def test_unknown_benchmark_or_engine_is_refused():
    with pytest.raises(SystemExit):
        bench.parse_args(["--only", "claims,nonsense"])
    with pytest.raises(SystemExit):
        bench.parse_args(["--engines", "oracle"])


def _sql_searches(document: dict) -> tuple[dict[str, dict], list[str]]:
    """The candidates figures by case, and the cases of the sql searches
    measured (their p50s, skipped ones left out)."""
    figures = {f["case"]: f for f in document["figures"] if f["bench"] == "candidates"}
    walls = [case for case in figures if case.endswith(" sql p50")
             and "SKIPPED" not in figures[case]["detail"]]
    return figures, walls


def test_each_sql_search_reports_the_cpu_it_spent_here(run):
    _code, document = run
    figures, walls = _sql_searches(document)
    assert walls
    for case in walls:
        cpu = figures[case.replace(" sql p50", " sql cpu p50")]
        assert cpu["unit"] == "ms" and cpu["value"] > 0


def test_each_sql_search_reports_its_statements_replayed_alone(run):
    _code, document = run
    figures, walls = _sql_searches(document)
    assert any("worst case" in case for case in walls)
    for case in walls:
        alone = figures[case.replace(" sql p50", " sql statements alone p50")]
        assert alone["unit"] == "ms" and alone["value"] > 0
        said = re.match(r"the search's (\d+) statements .*, (\d+) rows fetched", alone["detail"])
        statements, rows = int(said[1]), int(said[2])
        # At least the check for sharing providers and the search itself,
        # which returns the rows of the candidates it found.
        assert statements >= 2 and rows >= 1, (case, alone["detail"])
