"""Benchmark arithmetic: percentiles and the growth verdicts."""

from __future__ import annotations

import pytest

from benchmarks import growth
from benchmarks.results import Figure, Report, percentile


def test_percentile_is_nearest_rank():
    samples = list(range(100, 0, -1))  # 100..1, unordered on purpose
    assert percentile(samples, 50) == 50
    assert percentile(samples, 95) == 95
    assert percentile([7.0], 95) == 7.0
    with pytest.raises(ValueError):
        percentile([], 50)


def _periodic(quiet_ms_small: float, quiet_ms_large: float) -> Report:
    # Full-size series: 10 -> 1000 instances (a size ratio of 100).
    return Report(figures=[
        Figure("periodic", "sqlite", "10 nothing changed time", quiet_ms_small, "ms"),
        Figure("periodic", "sqlite", "1000 nothing changed time", quiet_ms_large, "ms"),
    ])


def _verdict(report: Report, label: str):
    (found,) = [v for v in report.verdicts if label in v.target]
    return found


def test_cost_growing_no_faster_than_size_is_linear_or_better():
    out = growth.summarise(_periodic(10.0, 900.0), ["sqlite"], quick=False)
    verdict = _verdict(out, "periodic nothing changed time 10->1000")
    assert verdict.passed and verdict.measured == "90.00x"


def test_cost_growing_faster_than_size_misses():
    out = growth.summarise(_periodic(10.0, 1500.0), ["sqlite"], quick=False)
    assert not _verdict(out, "periodic nothing changed time 10->1000").passed


def test_claims_are_not_judged_by_growth_but_by_throughput_scaling():
    report = Report(figures=[
        Figure("claims", "postgresql", "K=1 sql", 100.0, "cycles/s"),
        Figure("claims", "postgresql", "K=8 sql", 400.0, "cycles/s"),
    ])
    out = growth.summarise(report, ["postgresql"], quick=False)
    assert not [v for v in out.verdicts if "claims" in v.target]


def test_a_size_skipped_over_budget_is_a_miss_not_a_guess():
    report = Report(figures=[
        Figure("candidates", "sqlite", "1000 limit=none sql p50", 4000.0, "ms"),
        Figure("candidates", "sqlite", "10000 limit=none sql p50", 40000.0, "ms",
               "SKIPPED: linear projection ..."),
    ])
    out = growth.summarise(report, ["sqlite"], quick=False)
    verdict = _verdict(out, "candidates sql limit=none p50 1000->10000")
    assert not verdict.passed and "not measured" in verdict.measured
