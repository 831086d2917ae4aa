"""``python -m benchmarks.ab BASE [HEAD]``: two commits' candidate searches,
interleaved on one database.

Whole benchmark runs one after the other cannot tell a change of a few
percent from the machine's drift (the work unit of ``benchmarks/machine.py``
has moved by half within minutes). Here both commits search the same
seeded database at the same time: each commit's sql backend lives in a
worker process of its own (``benchmarks/ab_worker.py``, importing the
commit's ``rtframework`` from a temporary git worktree), and the parent
asks them in turn, call by call (a round is a few calls each, the side
that goes first swapped every round). After a few rounds of every case
both workers are replaced, so that what sets one process apart from
another (its place on the cores, its hash seed, its database session)
does not stay with one side. A round's ratio (head's median over base's)
compares calls made milliseconds apart; the table gives the median ratio,
its range over the rounds, how many rounds head won and a sign test of
that count. Both sides' answers are hashed (candidates and summaries)
and must be the same.

Clouds: ``flat`` (the candidates benchmark's providers, limits 10 / 1000 /
none, with and without the trait), ``worst`` (then the lowest-id 70% of
them full, limits 10 and 1000) and ``trees`` (the trees cloud, limits 10
and 1000). The database is seeded by this checkout's ``benchmarks.seed``,
so the two commits and this checkout must share the sql schema (their
migrations identical); otherwise the run refuses before it starts.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence

from benchmarks import candidates, machine, seed
from benchmarks import environment as env
from benchmarks.results import Figure, Report, checkout_commit, median, render
from rtframework.placement import types as t

BENCH = "ab"
SIDES = ("base", "head")
CLOUDS = ("flat", "worst", "trees")
MIGRATIONS = "rtframework/placement/sql/migrations"
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ab_worker.py")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Refused(Exception):
    """The run cannot start (unknown commit, schemas that differ)."""


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base", help="the commit compared against (any git revision)")
    parser.add_argument("head", nargs="?", default="HEAD",
                        help="the commit measured (default: %(default)s); local changes "
                        "not committed are in neither side")
    parser.add_argument("--engines", default="postgresql",
                        type=lambda v: _names(v, env.ENGINES, "engine"),
                        help="comma-separated database engines (default: %(default)s)")
    parser.add_argument("--clouds", default=",".join(CLOUDS),
                        type=lambda v: _names(v, CLOUDS, "cloud"),
                        help="comma-separated clouds (default: %(default)s)")
    parser.add_argument("--providers", type=_positive, default=10_000,
                        help="providers per cloud (default: %(default)s)")
    parser.add_argument("--rounds", type=_positive, default=20,
                        help="rounds per case, each side once per round (default: %(default)s)")
    parser.add_argument("--restart-every", type=_positive, default=4,
                        help="rounds per pair of worker processes: new ones after that many "
                        "rounds of every case (default: %(default)s)")
    parser.add_argument("--calls", type=_positive, default=5,
                        help="calls per side per round (default: %(default)s)")
    parser.add_argument("--work-dir", default=None,
                        help="parent of the run's scratch directory (default: the temp dir)")
    parser.add_argument("--results-dir", default=os.path.join(REPO, "benchmarks", "results"),
                        help="where the JSON file goes (default: benchmarks/results)")
    return parser.parse_args(argv)


def _names(value: str, allowed: Sequence[str], what: str) -> list[str]:
    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(unknown) or '(none)'}; choose from {', '.join(allowed)}")
    return names


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of at least 1")
    return number


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def resolve(revision: str) -> str:
    """The full commit id of ``revision``; Refused when git knows none."""
    try:
        return _git("rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
    except subprocess.CalledProcessError:
        raise Refused(f"unknown commit {revision!r}") from None


def check_schemas(base: str, head: str) -> None:
    """Refuse unless both commits and this checkout have the same
    migrations: one database, seeded here, must suit all three."""
    for args, what in (((base, head), f"{base[:10]} and {head[:10]}"),
                       ((base,), f"{base[:10]} and this checkout")):
        try:
            _git("diff", "--quiet", *args, "--", MIGRATIONS)
        except subprocess.CalledProcessError:
            raise Refused(f"the sql schema differs between {what} ({MIGRATIONS}): one "
                          "database cannot serve both sides") from None


@contextlib.contextmanager
def worktree(commit: str, parent: str) -> Iterator[str]:
    """A detached checkout of ``commit``, removed on exit."""
    path = tempfile.mkdtemp(prefix=f"ab-{commit[:10]}-", dir=parent)
    _git("worktree", "add", "--detach", "--force", path, commit)
    try:
        yield path
    finally:
        _git("worktree", "remove", "--force", path)


class Worker:
    """One commit's sql backend in a process of its own (ab_worker.py)."""

    def __init__(self, checkout: str, url: str, state_path: str) -> None:
        self.log = os.path.join(state_path, "worker.log")
        os.makedirs(state_path, exist_ok=True)
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                [sys.executable, WORKER, url, state_path], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=log, text=True,
                env={**os.environ, "PYTHONPATH": checkout})
        loaded = self._reply()["rtframework"]
        if not os.path.realpath(loaded).startswith(os.path.realpath(checkout) + os.sep):
            self.close()
            raise RuntimeError(f"the worker for {checkout} imported {loaded}")

    def _reply(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            with open(self.log) as log:
                raise RuntimeError(f"an ab worker stopped: {log.read()[-2000:]}")
        return json.loads(line)

    def ask(self, query: t.CandidateQuery, calls: int, digest: bool = False) -> dict:
        request = {"query": {"resources": dict(query.resources), "limit": query.limit,
                             "required_traits": sorted(query.required_traits)},
                   "calls": calls, "digest": digest}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return self._reply()

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


def measure(workers: dict[str, Worker], query: t.CandidateQuery, rounds: range,
            calls: int, samples: dict[str, list[dict]]) -> dict[str, str]:
    """The case's ``rounds`` on both sides (samples appended): in a round
    the sides take turns call by call, so that a burst of noise falls on
    both; the side that goes first swaps every round. Each side's digest
    first."""
    digests = {side: workers[side].ask(query, 1, digest=True)["digest"] for side in SIDES}
    for number in rounds:
        taken = {side: {"wall_ms": [], "cpu_ms": []} for side in SIDES}
        for _call in range(calls):
            for side in SIDES if number % 2 == 0 else SIDES[::-1]:
                reply = workers[side].ask(query, 1)
                taken[side]["wall_ms"] += reply["wall_ms"]
                taken[side]["cpu_ms"] += reply["cpu_ms"]
                taken[side]["found"] = reply["found"]
        for side in SIDES:
            samples[side].append(taken[side])
    return digests


def summarise(engine: str, case: str, samples: dict[str, list[dict]],
              digests: dict[str, set[str]]) -> Report:
    """Each side's p50 over all calls (min-max), CPU p50, and head/base
    per round: the median ratio with its min-max. The answers are the
    same when every digest of either side is the one same digest."""
    report = Report()
    for side in SIDES:
        wall = [ms for r in samples[side] for ms in r["wall_ms"]]
        report.figures.append(Figure(BENCH, engine, f"{case} {side} p50", median(wall), "ms",
                                     f"{len(wall)} calls; {samples[side][-1]['found']} "
                                     "candidates",
                                     min(wall), max(wall)))
        cpu = [ms for r in samples[side] for ms in r["cpu_ms"]]
        report.figures.append(Figure(BENCH, engine, f"{case} {side} cpu p50", median(cpu), "ms",
                                     "the worker's CPU time per call", min(cpu), max(cpu)))
    ratios = [median(h["wall_ms"]) / median(b["wall_ms"])
              for b, h in zip(samples["base"], samples["head"], strict=True)]
    faster = sum(r < 1 for r in ratios)
    slower = sum(r > 1 for r in ratios)
    same = len(digests["base"] | digests["head"]) == 1
    report.figures.append(Figure(
        BENCH, engine, f"{case} head/base", median(ratios), "x",
        f"head faster in {faster} of {len(ratios)} rounds (sign test "
        f"p={sign_test(faster, slower):.2g}); " + ("same answers" if same else "ANSWERS DIFFER"),
        min(ratios), max(ratios)))
    if not same:
        report.notes.append(f"{engine} {case}: the answers DIFFER (digests: base "
                            f"{', '.join(sorted(digests['base']))}; head "
                            f"{', '.join(sorted(digests['head']))})")
    return report


def run_engine(engine: str, args: argparse.Namespace, checkouts: dict[str, str],
               work_dir: str, report: Report, samples: dict) -> None:
    """Each cloud seeded once; then, per session of ``--restart-every``
    rounds, a new pair of workers (the one started first alternating) runs
    that many rounds of every case."""
    plans = []
    if {"flat", "worst"} & set(args.clouds):
        plans.append(("flat", seed.seed_sql, args.providers,
                      [c for c in ("flat", "worst") if c in args.clouds]))
    if "trees" in args.clouds:
        plans.append(("trees", seed.seed_trees_sql, seed.trees_nodes(args.providers),
                      ["trees"]))
    for name, seeder, count, clouds in plans:
        with contextlib.ExitStack() as stack:
            scratch = os.path.join(work_dir, f"{engine}-{name}")
            url = stack.enter_context(env.database(engine, scratch))
            env.sql_backend(scratch, url).close()  # the schema
            seeder(url, 0, count)
            seed.analyze(url)
            for cloud in clouds:
                if cloud == "worst":
                    seed.fill_sql(url, int(args.providers * candidates.WORST_FULL))
                    seed.analyze(url)
                _sessions(engine, args, checkouts, url, os.path.join(scratch, cloud),
                          _cases(cloud), report, samples)


def _sessions(engine: str, args: argparse.Namespace, checkouts: dict[str, str], url: str,
              scratch: str, cases: list[tuple[str, t.CandidateQuery]], report: Report,
              samples: dict) -> None:
    found = {case: {side: [] for side in SIDES} for case, _query in cases}
    digests = {case: {side: set() for side in SIDES} for case, _query in cases}
    for session, start in enumerate(range(0, args.rounds, args.restart_every)):
        rounds = range(start, min(start + args.restart_every, args.rounds))
        order = SIDES if session % 2 == 0 else SIDES[::-1]
        workers = {}
        try:
            for side in order:
                workers[side] = Worker(checkouts[side], url,
                                       os.path.join(scratch, f"{session}-{side}"))
            for case, query in cases:
                print(f"{engine} {case}: rounds {rounds.start + 1}-{rounds.stop} of "
                      f"{args.rounds}", file=sys.stderr, flush=True)
                got = measure(workers, query, rounds, args.calls, found[case])
                for side in SIDES:
                    digests[case][side].add(got[side])
        finally:
            for worker in workers.values():
                worker.close()
    for case, _query in cases:
        report.extend(summarise(engine, case, found[case], digests[case]))
        samples[f"{engine} {case}"] = found[case]


def sign_test(wins: int, losses: int) -> float:
    """Two-sided p of a sign test: how likely a split at least this
    uneven is when either side is as likely to win a round (ties left
    out). Below 0.05, the rounds say which commit is faster."""
    rounds = wins + losses
    if not rounds:
        return 1.0
    tail = sum(math.comb(rounds, k) for k in range(min(wins, losses) + 1)) / 2 ** rounds
    return min(1.0, 2 * tail)


def _cases(cloud: str) -> list[tuple[str, t.CandidateQuery]]:
    if cloud == "trees":
        return candidates.trees_cases(False)
    if cloud == "worst":
        return [(f"worst limit={limit}", t.CandidateQuery(resources=candidates.REQUEST,
                                                          limit=limit)) for limit in (10, 1000)]
    return candidates.cases()


def run(args: argparse.Namespace) -> tuple[Report, str]:
    commits = {"base": resolve(args.base), "head": resolve(args.head)}
    check_schemas(commits["base"], commits["head"])
    env.quiet_logs()
    started = datetime.datetime.now(datetime.timezone.utc)
    report, samples = Report(), {}
    report.notes.append(
        f"base {commits['base'][:10]}, head {commits['head'][:10]}: {args.providers} providers "
        f"per cloud; {args.rounds} rounds of {args.calls} calls per side per case, the sides "
        "taking turns call by call, the first swapped every round; new worker processes "
        f"every {args.restart_every} rounds; "
        "head/base is per round (head's median over base's).")
    load, tool = list(os.getloadavg()), checkout_commit()
    report.figures.append(machine.work_unit("at start"))
    with tempfile.TemporaryDirectory(prefix="rtf-ab-", dir=args.work_dir) as work_dir, \
            contextlib.ExitStack() as stack:
        checkouts = {side: stack.enter_context(worktree(commit, work_dir))
                     for side, commit in commits.items()}
        for engine in args.engines:
            run_engine(engine, args, checkouts, work_dir, report, samples)
    report.figures.append(machine.work_unit("at end"))
    os.makedirs(args.results_dir, exist_ok=True)
    path = os.path.join(args.results_dir, started.strftime("ab-%Y%m%dT%H%M%SZ.json"))
    document = {
        "started": started.isoformat(),
        "ended": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "base": commits["base"], "head": commits["head"], "commit": tool,
        "options": {"engines": args.engines, "clouds": args.clouds,
                    "providers": args.providers, "rounds": args.rounds, "calls": args.calls,
                    "restart_every": args.restart_every},
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count(), "cpu": machine.cpu_model(), "load_average": load,
                    "load_average_at_end": list(os.getloadavg())},
        **report.to_json(),
        "samples": samples,
    }
    with open(path, "w") as f:
        json.dump(document, f, indent=2)
    return report, path


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        report, path = run(args)
    except Refused as exc:
        print(f"python -m benchmarks.ab: {exc}", file=sys.stderr)
        return 2
    print(render(report))
    print(f"results written to {path}")
    return 1 if any("DIFFER" in note for note in report.notes) else 0


if __name__ == "__main__":
    sys.exit(main())
