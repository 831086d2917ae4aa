"""``python -m benchmarks.ab BASE [HEAD]``: two commits' candidate searches,
interleaved on one database.

Whole benchmark runs one after the other cannot tell a change of a few
percent from the machine's drift (the work unit of ``benchmarks/machine.py``
has moved by half within minutes). Here both commits search the same
seeded database at the same time: each commit's sql backend lives in a
worker process of its own (``benchmarks/ab_worker.py``, importing the
commit's ``rtframework`` from a temporary git worktree), and the parent
asks them in turn, call by call (a round is a few calls each; which side
goes first alternates within a session and is balanced across sessions,
see :func:`first_side`). A session is a pair of workers
running a few rounds of every case; each session has new workers,
started in the other order, so that what sets one process apart from
another (its place on the cores, its memory, its database session) does
not stay with one side. Sessions, not rounds, are the independent
samples: per session head's median over base's is taken over its rounds,
and the table gives the median over all rounds, the sessions' range, how
many sessions head won, and a sign test of that count (not corrected for
the number of cases: with ten cases a commit against itself shows p <
0.05 in some case now and then). Compare a commit with itself first to
see what the machine resolves. Both sides' answers are hashed
(candidates and summaries) and must be the same.

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
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence

from benchmarks import candidates, cli, machine, seed
from benchmarks import environment as env
from benchmarks.results import Figure, Report, checkout_commit, median, render
from rtframework.placement import types as t

BENCH = "ab"
SIDES = ("base", "head")
CLOUDS = ("flat", "worst", "trees")
MIGRATIONS = "rtframework/placement/sql/migrations"
# -P (Python 3.11): the worker's directory, this checkout's benchmarks/,
# stays off its import path; on 3.10 the worker takes it off itself.
_WORKER = (sys.executable, *(("-P",) if sys.version_info >= (3, 11) else ()),
           os.path.join(os.path.dirname(os.path.abspath(__file__)), "ab_worker.py"))
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A worker's environment leaves these out: each worker draws its own hash
# seed, and coverage measurement (the test suite's) stays in the parent.
_NOT_INHERITED = ("PYTHONHASHSEED", "COVERAGE_PROCESS_START", "COV_CORE_SOURCE",
                  "COV_CORE_CONFIG", "COV_CORE_DATAFILE")

Samples = dict[str, list[dict]]  # side -> rounds, each {"wall_ms", "cpu_ms", "found", "session"}


class Refused(Exception):
    """The run cannot start (unknown commit, schemas that differ, a commit
    whose code the worker cannot run)."""


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base", help="the commit compared against (any git revision)")
    parser.add_argument("head", nargs="?", default="HEAD",
                        help="the commit measured (default: %(default)s); changes not "
                        "committed are on neither side")
    parser.add_argument("--engines", default="postgresql",
                        type=lambda v: cli.names(v, env.ENGINES, "engine"),
                        help="comma-separated database engines (default: %(default)s)")
    parser.add_argument("--clouds", default=",".join(CLOUDS),
                        type=lambda v: cli.names(v, CLOUDS, "cloud"),
                        help="comma-separated clouds (default: %(default)s)")
    parser.add_argument("--providers", type=cli.positive, default=10_000,
                        help="providers per cloud (default: %(default)s)")
    parser.add_argument("--rounds", type=cli.positive, default=20,
                        help="rounds per case (default: %(default)s)")
    parser.add_argument("--calls", type=cli.positive, default=5,
                        help="calls per side per round (default: %(default)s)")
    parser.add_argument("--restart-every", type=cli.positive, default=2,
                        help="rounds per session, a new pair of workers each "
                        "(default: %(default)s)")
    parser.add_argument("--work-dir", default=None,
                        help="parent of the run's scratch directory (default: the temp dir)")
    parser.add_argument("--results-dir", default=os.path.join(REPO, "benchmarks", "results"),
                        help="where the JSON file goes (default: benchmarks/results)")
    return parser.parse_args(argv)


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def resolve(revision: str) -> str:
    """The full commit id of ``revision``; Refused, with git's words, when
    git knows none."""
    try:
        return _git("rev-parse", "--verify", f"{revision}^{{commit}}")
    except subprocess.CalledProcessError as exc:
        said = exc.stderr.strip().splitlines()
        raise Refused(f"unknown commit {revision!r}"
                      + (f" (git: {said[-1]})" if said else "")) from None


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
    try:
        _git("worktree", "add", "--detach", "--force", path, commit)
        yield path
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            _git("worktree", "remove", "--force", path)
        with contextlib.suppress(subprocess.CalledProcessError):
            _git("worktree", "prune")


def _worker_env(checkout: str) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
    return {**environ, "PYTHONPATH": checkout}


def _inside(path: str, checkout: str) -> bool:
    return os.path.realpath(path).startswith(os.path.realpath(checkout) + os.sep)


def probe(commit: str, checkout: str) -> None:
    """Refuse, before anything is seeded, a commit whose code the worker
    cannot configure and load from its checkout."""
    try:
        done = subprocess.run([*_WORKER, "--probe"], capture_output=True, text=True,
                              env=_worker_env(checkout), timeout=120)
        loaded = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 \
            else {}
    except (subprocess.TimeoutExpired, ValueError, IndexError) as exc:
        raise Refused(f"the worker cannot run commit {commit[:10]}: {exc}") from None
    wrong = [path for path in loaded.values() if not _inside(path, checkout)]
    if not loaded or wrong:
        said = (done.stderr.strip().splitlines()
                or [f"imported {', '.join(wrong)}" if wrong else "no answer"])[-1]
        raise Refused(f"the worker cannot run commit {commit[:10]} (exit {done.returncode}): "
                      f"{said}")


class Worker:
    """One commit's sql backend in a process of its own (ab_worker.py)."""

    def __init__(self, checkout: str, url: str, state_path: str) -> None:
        os.makedirs(state_path, exist_ok=True)
        self.log = os.path.join(state_path, "worker.log")
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                _WORKER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
                env=_worker_env(checkout))
        try:
            self._send([url, state_path])
            loaded = self._reply()
            wrong = [path for path in loaded.values() if not _inside(path, checkout)]
            if wrong:
                raise RuntimeError(f"the worker for {checkout} imported {', '.join(wrong)}")
        except BaseException:
            self.close()
            raise

    def _ended(self, timeout: float) -> None:
        """Wait for the process to end; kill it after ``timeout`` seconds."""
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _stopped(self) -> RuntimeError:
        self._ended(10)
        with open(self.log) as log:
            return RuntimeError(f"an ab worker stopped (exit {self.process.returncode}): "
                                f"{log.read()[-2000:]}")

    def _send(self, value: object) -> None:
        try:
            self.process.stdin.write(json.dumps(value) + "\n")
            self.process.stdin.flush()
        except OSError:
            raise self._stopped() from None

    def _reply(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise self._stopped()
        return json.loads(line)

    def ask(self, query: t.CandidateQuery, calls: int, digest: bool = False) -> dict:
        """``calls`` timed searches of ``query`` (one more, untimed, hashed
        first with ``digest``)."""
        sent = {"resources": dict(query.resources), "limit": query.limit,
                "required_traits": sorted(query.required_traits)}
        if query != t.CandidateQuery(resources=sent["resources"], limit=sent["limit"],
                                     required_traits=frozenset(sent["required_traits"])):
            raise ValueError(f"the worker takes resources, limit and required traits only: "
                             f"{query}")
        self._send({"query": sent, "calls": calls, "digest": digest})
        return self._reply()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        self._ended(60)
        self.process.stdout.close()


def first_side(number: int, session: int) -> int:
    """Which side (its index in SIDES) calls first in round ``number``:
    every other round within a session, and, with one round per session,
    in the order 0, 1, 1, 0 over four sessions, so that it goes with
    neither the round's place nor the workers' start order (session % 2)."""
    return (number + session // 2) % 2


def measure(workers: dict[str, Worker], query: t.CandidateQuery, rounds: range,
            calls: int, session: int, samples: Samples) -> dict[str, str]:
    """The case's ``rounds`` on both sides, appended to ``samples``: in a
    round the sides take turns call by call, so that a burst of noise
    falls on both (see :func:`first_side`). Each side's digest first (its
    search also warms the side up)."""
    digests = {side: workers[side].ask(query, 0, digest=True)["digest"] for side in SIDES}
    for number in rounds:
        taken = {side: {"wall_ms": [], "cpu_ms": [], "session": session} for side in SIDES}
        for _call in range(calls):
            for side in SIDES if first_side(number, session) == 0 else SIDES[::-1]:
                reply = workers[side].ask(query, 1)
                taken[side]["wall_ms"] += reply["wall_ms"]
                taken[side]["cpu_ms"] += reply["cpu_ms"]
                taken[side]["found"] = reply["found"]
        for side in SIDES:
            samples[side].append(taken[side])
    return digests


def sign_test(wins: int, losses: int) -> float:
    """Two-sided p of a sign test: how likely a split at least this
    uneven is when either side is as likely to win (ties left out)."""
    trials = wins + losses
    if not trials:
        return 1.0
    tail = sum(math.comb(trials, k) for k in range(min(wins, losses) + 1)) / 2 ** trials
    return min(1.0, 2 * tail)


def summarise(engine: str, case: str, samples: Samples,
              digests: dict[str, set[str]]) -> Report:
    """Each side's p50 over all calls (min-max) and CPU p50; head/base:
    the median of the rounds' ratios (head's median over base's), the
    range of the sessions' ratios (the median of each session's rounds),
    the sessions head won and their sign test; and whether the answers
    were the same."""
    report = Report()
    for side in SIDES:
        wall = [ms for r in samples[side] for ms in r["wall_ms"]]
        report.figures.append(Figure(BENCH, engine, f"{case} {side} p50", median(wall), "ms",
                                     f"{len(wall)} calls; {samples[side][-1]['found']} "
                                     "candidates", min(wall), max(wall)))
        cpu = [ms for r in samples[side] for ms in r["cpu_ms"]]
        report.figures.append(Figure(BENCH, engine, f"{case} {side} cpu p50", median(cpu), "ms",
                                     "the worker's CPU time per call", min(cpu), max(cpu)))
    by_session: dict[int, list[float]] = {}
    for b, h in zip(samples["base"], samples["head"], strict=True):
        by_session.setdefault(b["session"], []).append(median(h["wall_ms"]) /
                                                       median(b["wall_ms"]))
    ratios = [r for rs in by_session.values() for r in rs]
    sessions = [median(rs) for rs in by_session.values()]
    won, lost = sum(r < 1 for r in sessions), sum(r > 1 for r in sessions)
    ratio, answers = median(ratios), _answers(digests)
    report.figures.append(Figure(
        BENCH, engine, f"{case} head/base", ratio, "x",
        f"{ratio:.3f}; sessions {min(sessions):.3f}-{max(sessions):.3f}, head faster "
        f"in {won} of {len(sessions)} (sign test p={sign_test(won, lost):.2g}); {answers}",
        min(sessions), max(sessions)))
    if answers != "same answers":
        report.notes.append(f"{engine} {case}: {answers} (digests: base "
                            f"{', '.join(sorted(digests['base']))}; head "
                            f"{', '.join(sorted(digests['head']))})")
    return report


def _answers(digests: dict[str, set[str]]) -> str:
    varied = [side for side in SIDES if len(digests[side]) > 1]
    if varied:
        return f"ANSWERS VARY from search to search on {' and '.join(varied)}"
    return "same answers" if digests["base"] == digests["head"] else "ANSWERS DIFFER"


def run_engine(engine: str, args: argparse.Namespace, checkouts: dict[str, str],
               work_dir: str, report: Report, samples: dict[str, Samples]) -> None:
    """Each cloud seeded once into a new database, then its sessions."""
    plans = []
    if {"flat", "worst"} & set(args.clouds):
        plans.append(("flat", seed.seed_sql, args.providers,
                      [c for c in ("flat", "worst") if c in args.clouds]))
    if "trees" in args.clouds:
        plans.append(("trees", seed.seed_trees_sql, seed.trees_nodes(args.providers),
                      ["trees"]))
    for name, seeder, count, clouds in plans:
        scratch = os.path.join(work_dir, f"{engine}-{name}")
        with env.database(engine, scratch) as url:
            env.sql_backend(scratch, url).close()  # the schema
            seeder(url, 0, count)
            seed.analyze(url)
            for cloud in clouds:
                if cloud == "worst":
                    candidates.fill_worst(url, args.providers)
                _sessions(engine, args, checkouts, url, os.path.join(scratch, cloud),
                          _cases(cloud), report, samples)


def _sessions(engine: str, args: argparse.Namespace, checkouts: dict[str, str], url: str,
              scratch: str, cases: list[tuple[str, t.CandidateQuery]], report: Report,
              samples: dict[str, Samples]) -> None:
    """Sessions of ``--restart-every`` rounds of every case, each on a new
    pair of workers started in the other order from the session before."""
    found: dict[str, Samples] = {case: {side: [] for side in SIDES} for case, _q in cases}
    digests = {case: {side: set() for side in SIDES} for case, _q in cases}
    for session, start in enumerate(range(0, args.rounds, args.restart_every)):
        rounds = range(start, min(start + args.restart_every, args.rounds))
        with contextlib.ExitStack() as stack:
            workers = {}
            for side in SIDES if session % 2 == 0 else SIDES[::-1]:
                workers[side] = Worker(checkouts[side], url,
                                       os.path.join(scratch, f"{session}-{side}"))
                stack.callback(workers[side].close)
            for case, query in cases:
                print(f"{engine} {case}: rounds {rounds.start + 1}-{rounds.stop} of "
                      f"{args.rounds}", file=sys.stderr, flush=True)
                got = measure(workers, query, rounds, args.calls, session, found[case])
                for side in SIDES:
                    digests[case][side].add(got[side])
    for case, _query in cases:
        report.extend(summarise(engine, case, found[case], digests[case]))
        samples[f"{engine} {case}"] = found[case]


def _cases(cloud: str) -> list[tuple[str, t.CandidateQuery]]:
    if cloud == "trees":
        return candidates.trees_cases(False)
    if cloud == "worst":
        return [(f"worst limit={limit}", t.CandidateQuery(resources=candidates.REQUEST,
                                                          limit=limit))
                for limit in candidates.WORST_LIMITS]
    return candidates.cases()


def run(args: argparse.Namespace) -> tuple[Report, str]:
    """Check, check out, seed and measure; the report and its JSON file."""
    commits = {"base": resolve(args.base), "head": resolve(args.head)}
    check_schemas(commits["base"], commits["head"])
    for path, option in ((args.work_dir, "--work-dir"), (args.results_dir, "--results-dir")):
        if path is not None:
            _writable(path, option)
    tool = checkout_commit()
    if tool.endswith("+dirty") and commits["head"] == resolve("HEAD"):
        print("python -m benchmarks.ab: this checkout has changes not committed; they are "
              "measured on neither side", file=sys.stderr)
    env.quiet_logs()
    started = datetime.datetime.now(datetime.timezone.utc)
    report, samples = Report(), {}
    report.notes.append(
        f"base {commits['base'][:10]}, head {commits['head'][:10]}: {args.providers} providers "
        f"per cloud; {args.rounds} rounds of {args.calls} calls per side per case, the sides "
        "taking turns call by call, the first alternating within a session and balanced "
        "across sessions; a session (new worker "
        f"processes) every {args.restart_every} rounds. head/base: the median of the rounds' "
        "ratios (head's median over base's); min-max and the sign test are the sessions'; "
        "p is not corrected for the number of cases.")
    load = list(os.getloadavg())
    report.figures.append(machine.work_unit("at start"))
    with tempfile.TemporaryDirectory(prefix="rtf-ab-", dir=args.work_dir) as work_dir, \
            contextlib.ExitStack() as stack:
        checkouts = {side: stack.enter_context(worktree(commit, work_dir))
                     for side, commit in commits.items()}
        for side, checkout in checkouts.items():
            probe(commits[side], checkout)
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


def _writable(path: str, option: str) -> None:
    """Refuse, before the run starts, a directory it could not write to
    (or, for one not there yet, could not make): nothing is made here."""
    there = os.path.abspath(path)
    while not os.path.exists(there):
        there = os.path.dirname(there)
    if not os.path.isdir(there):
        raise Refused(f"{option} {path}: {there} is not a directory")
    if not os.access(there, os.W_OK | os.X_OK):
        raise Refused(f"{option} {path}: {there} cannot be written to")


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # so worktrees, workers and databases are cleaned up


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        report, path = run(args)
    except Refused as exc:
        print(f"python -m benchmarks.ab: {exc}", file=sys.stderr)
        return 2
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(render(report))
    print(f"results written to {path}")
    return 1 if any("ANSWERS" in note for note in report.notes) else 0


if __name__ == "__main__":
    sys.exit(main())
