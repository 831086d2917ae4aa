"""Claims verdicts: errors, the raw baseline's spread and throughput scaling."""

from __future__ import annotations

from benchmarks import claims
from benchmarks.load import Throughput
from benchmarks.results import Report

PLAN = {"clients": (1, 8), "seconds": 1.0, "rounds": 3, "raw_rounds": 15}


def _rounds(*rates: float, errors: int = 0) -> list[Throughput]:
    return [Throughput(int(rate), errors if i == 0 else 0, 1.0, "boom" if errors else "")
            for i, rate in enumerate(rates)]


def _samples(overrides: dict | None = None) -> dict:
    samples = {
        ("sql", 1): _rounds(100, 101, 99), ("sql", 8): _rounds(250, 260, 255),
        ("placement", 1): _rounds(9, 9, 9), ("placement", 8): _rounds(20, 20, 20),
        ("raw", 1): _rounds(300, 302, 298), ("raw", 8): _rounds(900, 905, 895),
    }
    samples.update(overrides or {})
    return samples


def _verdicts(samples: dict, engine: str = "postgresql") -> dict[str, tuple[bool, str]]:
    report = Report()
    claims._summarise(report, engine, PLAN, samples, "fsync=on", 2, None)
    return {v.target: (v.passed, v.measured) for v in report.verdicts}


def test_targets_pass_when_every_side_ran_clean():
    found = _verdicts(_samples())
    assert found["K=1: sql >= 10x Placement"] == (True, "11.11x")
    assert found["K=1: sql >= 50% of raw commits"] == (True, "67%")
    assert found["sql throughput K=8 >= 2x K=1"] == (True, "2.55x")


def test_errors_on_either_side_make_a_miss_whatever_the_ratio():
    found = _verdicts(_samples({("placement", 1): _rounds(1, 1, 1, errors=5)}))
    passed, measured = found["K=1: sql >= 10x Placement"]
    assert not passed and "5 errors" in measured
    found = _verdicts(_samples({("sql", 8): _rounds(250, 260, 255, errors=2)}))
    assert not found["sql throughput K=8 >= 2x K=1"][0]


def test_raw_ratio_is_a_miss_while_the_raw_rounds_spread_over_ten_percent():
    found = _verdicts(_samples({("raw", 1): _rounds(200, 300, 400)}))
    passed, measured = found["K=1: sql >= 50% of raw commits"]
    assert not passed and "not settled" in measured


def test_throughput_that_does_not_double_misses_the_scaling_target():
    found = _verdicts(_samples({("sql", 8): _rounds(150, 160, 155)}))
    assert found["sql throughput K=8 >= 2x K=1"] == (False, "1.55x")


def test_verdicts_are_given_on_the_target_engine_only():
    assert _verdicts(_samples(), engine="sqlite") == {}


def test_figures_carry_the_rounds_min_and_max():
    report = Report()
    claims._summarise(report, "sqlite", PLAN, _samples(), "synchronous=2", 1, None)
    sql = report.find("claims", "sqlite", "K=1 sql")
    assert (sql.low, sql.value, sql.high) == (99, 100, 101)
