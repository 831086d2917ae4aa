"""What a benchmark reports: figures, verdicts against targets, notes."""

from __future__ import annotations

import dataclasses
import statistics
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
