"""``python -m benchmarks``: rtframework against OpenStack Placement.

Prints one table per benchmark and the verdicts against the targets, and
writes everything to ``benchmarks/results/<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import os
import platform
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence

from benchmarks import (
    candidates,
    claims,
    claims_race,
    cli,
    growth,
    machine,
    memory,
    periodic,
    scale,
)
from benchmarks import environment as env
from benchmarks.results import Report, checkout_commit, render
from tests.fixtures.placement_server import PlacementServer

# In this order: the Placement-free ones first (a smoke run starts
# Placement meanwhile); candidates seeds the shared Placement before claims,
# which clears only what it wrote itself.
BENCHMARKS = {
    "periodic": periodic.run,
    "memory": memory.run,
    "candidates": candidates.run,
    "claims": claims.run,
    "claims_race": claims_race.run,
    "scale": scale.run,
}
USES_PLACEMENT = ("candidates", "claims", "scale")
DEFAULT_ENGINES = ("sqlite", "postgresql")
RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and short rounds: a smoke run, not figures to quote")
    parser.add_argument("--engines", default=",".join(DEFAULT_ENGINES),
                        type=lambda v: cli.names(v, env.ENGINES, "engine"),
                        help="comma-separated database engines (default: %(default)s)")
    parser.add_argument("--only", default=",".join(BENCHMARKS),
                        type=lambda v: cli.names(v, list(BENCHMARKS), "benchmark"),
                        help="comma-separated benchmarks (default: all)")
    parser.add_argument("--no-placement", action="store_true",
                        help="skip the OpenStack Placement side of every comparison")
    parser.add_argument("--work-dir", default=None,
                        help="parent of the run's scratch directory (SQLite files, Placement "
                        "config and log); default: the system's temp dir")
    parser.add_argument("--results-dir", default=RESULTS_DIR,
                        help="where the JSON file goes (default: benchmarks/results)")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> tuple[Report, str]:
    env.quiet_logs()
    with_placement = not args.no_placement and env.placement_available()
    report = Report()
    if not with_placement:
        report.notes.append("OpenStack Placement skipped (--no-placement, or openstack-placement "
                            "or gunicorn "
                            "not installed): no comparisons with it in this run.")
    started = datetime.datetime.now(datetime.timezone.utc)
    # The code and the machine as the run begins: files edited during a
    # long run change neither what it measures nor what it started from.
    at_start = {"commit": checkout_commit(), "load_average": list(os.getloadavg())}
    report.figures.append(machine.work_unit("at start"))
    with tempfile.TemporaryDirectory(prefix="rtf-bench-", dir=args.work_dir) as work_dir:
        for engine in args.engines:
            with contextlib.ExitStack() as stack:
                began = time.perf_counter()
                placement = _start_placement(stack, engine, work_dir) if with_placement else None
                if placement is not None and not args.quick:
                    # Full runs measure nothing while Placement starts.
                    _placement_server(report, engine, placement, began)
                for name in (n for n in BENCHMARKS if n in args.only):
                    server = _placement_server(report, engine, placement, began) \
                        if name in USES_PLACEMENT else None
                    _run_one(report, name, engine, os.path.join(work_dir, f"{engine}-{name}"),
                             args.quick, server)
    report.figures.append(machine.work_unit("at end"))
    report.extend(growth.summarise(report, args.engines, args.quick))
    path = _write_json(report, args, started, at_start, with_placement)
    return report, path


def _start_placement(stack: contextlib.ExitStack, engine: str,
                     work_dir: str) -> env.BackgroundPlacement:
    """One Placement per engine, shared by the benchmarks, on its own
    database, served as ``env.placement_serving`` says."""
    started = env.BackgroundPlacement(os.path.join(work_dir, f"{engine}-placement"), engine,
                                      env.placement_serving(engine))
    stack.callback(started.close)
    return started


def _placement_server(report: Report, engine: str, started: env.BackgroundPlacement | None,
                      began: float) -> PlacementServer | None:
    if started is None:
        return None
    try:
        server = started.server()
    except RuntimeError as exc:
        note = f"Placement on {engine} FAILED to start, compared with nothing"
        if not any(n.startswith(note) for n in report.notes):
            report.notes.append(f"{note}: {str(exc).splitlines()[0]}")
        return None
    note = f"Placement on {engine}: {server.serving.describe()}, on its own database"
    if note not in " ".join(report.notes):
        report.notes.append(f"{note}, up {time.perf_counter() - began:.1f}s after the start "
                            "of this engine's run (db sync included).")
    return server


def _run_one(report: Report, name: str, engine: str, work_dir: str, quick: bool,
             server: PlacementServer | None) -> None:
    began = time.perf_counter()
    print(f"running {name} on {engine} ...", file=sys.stderr, flush=True)
    try:
        report.extend(BENCHMARKS[name](engine, work_dir, quick, server))
    except Exception as exc:  # noqa: BLE001 - one failure must not lose the rest
        traceback.print_exc()
        report.notes.append(f"{name} on {engine} FAILED: {type(exc).__name__}: {exc}")
    print(f"  {name} on {engine}: {time.perf_counter() - began:.1f}s", file=sys.stderr,
          flush=True)


def _write_json(report: Report, args, started: datetime.datetime, at_start: dict,
                with_placement: bool) -> str:
    os.makedirs(args.results_dir, exist_ok=True)
    path = os.path.join(args.results_dir, started.strftime("%Y%m%dT%H%M%SZ") + ".json")
    document = {
        "started": started.isoformat(),
        "ended": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "commit": at_start["commit"],
        "options": {"quick": args.quick, "engines": args.engines, "only": args.only,
                    "placement": with_placement},
        "placement_serving": {engine: dataclasses.asdict(env.placement_serving(engine))
                              for engine in args.engines} if with_placement else {},
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count(), "cpu": machine.cpu_model(),
                    "load_average": at_start["load_average"],
                    "load_average_at_end": list(os.getloadavg())},
        **report.to_json(),
    }
    with open(path, "w") as f:
        json.dump(document, f, indent=2)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    report, path = run(args)
    print(render(report))
    print(f"results written to {path}")
    return 1 if any("FAILED" in note for note in report.notes) else 0


if __name__ == "__main__":
    sys.exit(main())
