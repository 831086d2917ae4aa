"""Growth: how each cost scales from the smallest to the largest size.

For one series (a system, engine and case) the cost of one operation at
the largest size is divided by its cost at the smallest size. The verdict
is "linear or better" when that ratio is at most the ratio of the sizes.
Claims are judged by their throughput scaling instead (see claims.py).

* candidates: p50 latency of one request, size = providers;
* periodic: one pass's wall time and backend reads, size = instances.
"""

from __future__ import annotations

from benchmarks import candidates, periodic
from benchmarks.results import Figure, Report, Verdict

BENCH = "growth"


def _series(report: Report, bench: str, engine: str, label: str, sizes, cost_case) -> None:
    small, large = min(sizes), max(sizes)
    first = report.find(bench, engine, cost_case(small))
    last = report.find(bench, engine, cost_case(large))
    if first is None or last is None or not first.value:
        return
    size_ratio = large / small
    case = f"{bench} {label} {small}->{large}"
    if "SKIPPED" in last.detail:
        report.verdicts.append(Verdict(
            BENCH, engine, f"{case}: cost ratio <= size ratio {size_ratio:g} (linear or better)",
            "not measured: over the per-call budget", False))
        return
    ratio = last.value / first.value
    report.figures.append(Figure(BENCH, engine, case, ratio, "x",
                                 f"size ratio {size_ratio:g}"))
    report.verdicts.append(Verdict(
        BENCH, engine, f"{case}: cost ratio <= size ratio {size_ratio:g} (linear or better)",
        f"{ratio:.2f}x", ratio <= size_ratio))


def summarise(report: Report, engines, quick: bool) -> Report:
    """Growth figures and verdicts from the figures already in ``report``."""
    out = Report()
    out.figures, out.verdicts = [], []
    scratch = Report(figures=list(report.figures))
    for engine in engines:
        providers = candidates.sizes(quick)["providers"]
        for case, _query in candidates.cases():
            for system in ("sql", "placement"):
                _series(scratch, candidates.BENCH, engine, f"{system} {case} p50", providers,
                        lambda n, c=case, s=system: f"{n} {c} {s} p50")
        for case in ("nothing changed", "one changed"):
            for metric in ("time", "reads"):
                _series(scratch, periodic.BENCH, engine, f"{case} {metric}",
                        periodic.sizes(quick), lambda n, c=case, m=metric: f"{n} {c} {m}")
    out.figures = scratch.figures[len(report.figures):]
    out.verdicts = scratch.verdicts
    return out
