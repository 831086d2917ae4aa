"""What a benchmark reports: figures, verdicts against targets, notes."""

from __future__ import annotations

import dataclasses
import os
import statistics
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Figure:
    """One measured number, e.g. claims / postgresql / "K=8 sql" / 412 cycles/s."""

    bench: str
    engine: str
    case: str
    value: float
    unit: str
    detail: str = ""
    # The smallest and largest round behind a median, where there were rounds.
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Verdict:
    """A target checked against figures of the same run (never in tests)."""

    bench: str
    engine: str
    target: str
    measured: str
    passed: bool

    @property
    def label(self) -> str:
        return "PASS" if self.passed else "MISS"


@dataclass
class Report:
    """Everything one benchmark module produced."""

    figures: list[Figure] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    # What a figure means (definitions, seeding times, server settings).
    notes: list[str] = field(default_factory=list)

    def extend(self, other: Report) -> None:
        self.figures.extend(other.figures)
        self.verdicts.extend(other.verdicts)
        self.notes.extend(other.notes)

    def find(self, bench: str, engine: str, case: str) -> Figure | None:
        for figure in self.figures:
            if (figure.bench, figure.engine, figure.case) == (bench, engine, case):
                return figure
        return None

    def to_json(self) -> dict:
        return {
            "figures": [dataclasses.asdict(f) for f in self.figures],
            "verdicts": [dict(dataclasses.asdict(v), verdict=v.label) for v in self.verdicts],
            "notes": list(self.notes),
        }


def percentile(samples: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of at least one sample."""
    if not samples:
        raise ValueError("percentile of no samples")
    ordered = sorted(samples)
    rank = max(1, round(q / 100 * len(ordered) + 0.4999))
    return ordered[min(rank, len(ordered)) - 1]


def median(samples: Sequence[float]) -> float:
    return statistics.median(samples)


def spread(samples: Sequence[float]) -> float:
    """(max - min) / median of the rounds: 0.1 means they lie within 10%."""
    middle = median(samples)
    return (max(samples) - min(samples)) / middle if middle else float("inf")


def fmt(value: float) -> str:
    """A figure as the tables print it: whole numbers whole, else two
    decimals below 10, one below 100, none above."""
    if value == int(value) and abs(value) < 1e6:
        return f"{int(value)}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


def render(report: Report) -> str:
    """The figures, one table per benchmark, then the verdicts."""
    from prettytable import PrettyTable

    parts = []
    for bench in dict.fromkeys(f.bench for f in report.figures):
        table = PrettyTable(["engine", "case", "value", "min-max", "unit", "detail"],
                            align="l")
        table.align["value"] = "r"
        table.title = bench
        for f in (f for f in report.figures if f.bench == bench):
            rounds = "" if f.low is None else f"{fmt(f.low)}-{fmt(f.high)}"
            table.add_row([f.engine, f.case, fmt(f.value), rounds, f.unit, f.detail])
        parts.append(table.get_string())
    if report.verdicts:
        table = PrettyTable(["benchmark", "engine", "target", "measured", "verdict"], align="l")
        table.title = "targets"
        for v in report.verdicts:
            table.add_row([v.bench, v.engine, v.target, v.measured, v.label])
        parts.append(table.get_string())
    parts.extend(f"* {note}" for note in report.notes)
    return "\n".join(parts)


def checkout_commit() -> str:
    """The checkout's commit (with ``+dirty`` for local changes), or ''."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        head = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return head + ("+dirty" if dirty else "")
