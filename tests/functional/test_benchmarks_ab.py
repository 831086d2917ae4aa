"""`python -m benchmarks.ab`: two commits searched side by side on one
database. Its arithmetic, its refusals, its cleanup, and a small run end
to end. No timing is asserted."""

from __future__ import annotations

import glob
import json
import subprocess

import pytest

from benchmarks import ab, ab_worker
from rtframework.placement import types as t

pytestmark = [pytest.mark.sqlite_only]


def _worktrees() -> str:
    return subprocess.run(["git", "-C", ab.REPO, "worktree", "list", "--porcelain"],
                          capture_output=True, text=True, check=True).stdout


@pytest.mark.slow
def test_a_commit_against_itself_gives_the_same_answers_and_leaves_nothing_behind(tmp_path):
    code = ab.main(["HEAD", "HEAD", "--engines", "sqlite", "--providers", "60", "--rounds", "3",
                    "--restart-every", "2", "--calls", "2", "--work-dir", str(tmp_path),
                    "--results-dir", str(tmp_path / "out")])
    assert code == 0
    (path,) = glob.glob(str(tmp_path / "out" / "ab-*.json"))
    with open(path) as f:
        document = json.load(f)
    assert document["base"] == document["head"]
    ratios = [f for f in document["figures"] if f["case"].endswith("head/base")]
    cases = [f["case"].removesuffix(" head/base") for f in ratios]
    assert len(cases) == 6 + 2 + 2  # flat, worst, trees
    assert {"limit=1000", "worst limit=10", "trees limit=1000"} <= set(cases)
    for figure in ratios:
        assert figure["detail"].endswith("; same answers")
        assert "head faster in" in figure["detail"] and " of 2 " in figure["detail"]
    assert len(document["samples"]) == 10
    for case, sides in document["samples"].items():
        assert set(sides) == {"base", "head"}, case
        for rounds in sides.values():
            assert [r["session"] for r in rounds] == [0, 0, 1]
            assert all(len(r["wall_ms"]) == 2 and len(r["cpu_ms"]) == 2 for r in rounds)
    assert str(tmp_path) not in _worktrees()


def test_a_failure_midway_removes_the_checkouts(tmp_path, monkeypatch):
    def failing(*_args):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(ab, "run_engine", failing)
    with pytest.raises(RuntimeError, match="went away"):
        ab.main(["HEAD", "--engines", "sqlite", "--work-dir", str(tmp_path),
                 "--results-dir", str(tmp_path / "out")])
    assert str(tmp_path) not in _worktrees()
    assert list(tmp_path.iterdir()) == []


def test_answers_that_differ_fail_the_run(tmp_path, monkeypatch):
    report = ab.Report(notes=["sqlite limit=10: ANSWERS DIFFER (digests: base a; head b)"])
    monkeypatch.setattr(ab, "run", lambda _args: (report, str(tmp_path / "ab.json")))
    assert ab.main(["HEAD", "--engines", "sqlite"]) == 1
    report.notes.clear()
    assert ab.main(["HEAD", "--engines", "sqlite"]) == 0


def test_a_results_directory_that_cannot_be_made_is_refused_first(tmp_path, capsys):
    taken = tmp_path / "a-file"
    taken.write_text("")
    code = ab.main(["HEAD", "--engines", "sqlite", "--work-dir", str(tmp_path),
                    "--results-dir", str(taken / "results")])
    assert code == 2
    assert f"--results-dir {taken}/results: {taken} is not a directory\n" in \
        capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["a-file"]


def test_the_side_that_calls_first_goes_with_neither_round_nor_start_order():
    # Two rounds per session: both orders in every session.
    assert [ab.first_side(n, n // 2) for n in range(8)] == [0, 1, 0, 1, 1, 0, 1, 0]
    # One round per session: over four sessions each call order meets each
    # start order (session % 2) once.
    pairs = {(ab.first_side(s, s), s % 2) for s in range(4)}
    assert pairs == {(0, 0), (0, 1), (1, 0), (1, 1)}


def test_a_worker_refuses_code_from_outside_its_checkout(tmp_path):
    """An empty directory as the checkout: the worker must not fall back
    on this checkout's code (the editable install)."""
    with pytest.raises(RuntimeError,
                       match="(?s)an ab worker stopped.*No module named 'rtframework'"):
        ab.Worker(str(tmp_path), f"sqlite:///{tmp_path}/x.sqlite", str(tmp_path / "state"))
    with pytest.raises(ab.Refused, match="(?s)the worker cannot run commit abcdef1234 "
                       "\\(exit 1\\): .*No module named 'rtframework'"):
        ab.probe("abcdef1234567", str(tmp_path))


def _round(session: int, *wall_ms: float) -> dict:
    return {"wall_ms": list(wall_ms), "cpu_ms": [1.0] * len(wall_ms), "found": 3,
            "session": session}


def test_the_ratio_is_taken_per_round_and_the_sessions_counted():
    samples = {"base": [_round(0, 10, 10), _round(0, 20, 20), _round(1, 10, 10),
                        _round(2, 10, 10)],
               "head": [_round(0, 5, 5), _round(0, 30, 30), _round(1, 9, 9), _round(2, 12, 12)]}
    digests = {side: {"same"} for side in ab.SIDES}
    report = ab.summarise("sqlite", "limit=10", samples, digests)
    ratio = report.find(ab.BENCH, "sqlite", "limit=10 head/base")
    # Rounds 0.5, 1.5, 0.9, 1.2: median 1.05. Sessions 1.0 (0.5 and 1.5), 0.9, 1.2.
    assert ratio.value == pytest.approx(1.05)
    assert (ratio.low, ratio.high) == pytest.approx((0.9, 1.2))
    assert ratio.detail == ("1.050; sessions 0.900-1.200, head faster in 1 of 3 (sign test "
                            "p=1); same answers")
    base = report.find(ab.BENCH, "sqlite", "limit=10 base p50")
    assert (base.value, base.low, base.high) == (10, 10, 20)
    assert not report.notes


@pytest.mark.parametrize(("digests", "said"), [
    ({"base": {"aaaa"}, "head": {"bbbb"}}, "ANSWERS DIFFER"),
    ({"base": {"aaaa", "cccc"}, "head": {"aaaa"}}, "ANSWERS VARY from search to search on base"),
])
def test_answers_that_differ_or_vary_are_said(digests, said):
    samples = {side: [_round(0, 1.0)] for side in ab.SIDES}
    report = ab.summarise("postgresql", "trees limit=10", samples, digests)
    assert report.find(ab.BENCH, "postgresql", "trees limit=10 head/base").detail.endswith(said)
    (note,) = report.notes
    assert note.startswith(f"postgresql trees limit=10: {said} (digests: base aaaa")


def test_the_sign_test_is_two_sided_and_leaves_ties_out():
    assert ab.sign_test(0, 0) == 1.0
    assert ab.sign_test(10, 10) == 1.0
    assert ab.sign_test(3, 0) == 0.25  # 2 * (1/2)**3
    assert ab.sign_test(0, 3) == 0.25
    assert ab.sign_test(15, 5) == pytest.approx(0.0414, abs=1e-4)
    assert ab.sign_test(14, 6) == pytest.approx(0.1153, abs=1e-4)


def test_the_digest_takes_the_candidates_in_their_order():
    def answer(*providers: str, used: int = 2) -> t.AllocationCandidates:
        return t.AllocationCandidates(
            allocation_requests=tuple(t.AllocationRequest({p: {"VCPU": used}})
                                      for p in providers),
            provider_summaries={})

    assert ab_worker.digest(answer("a", "b")) == ab_worker.digest(answer("a", "b"))
    assert ab_worker.digest(answer("a", "b")) != ab_worker.digest(answer("b", "a"))
    assert ab_worker.digest(answer("a", "b")) != ab_worker.digest(answer("a", "b", used=3))
    assert ab_worker.digest(answer("a", "b")) != ab_worker.digest(answer("a"))


def test_a_query_the_worker_cannot_carry_is_refused():
    worker = ab.Worker.__new__(ab.Worker)  # never started: the check comes first
    with pytest.raises(ValueError, match="resources, limit and required traits only"):
        worker.ask(t.CandidateQuery(resources={"VCPU": 1}, in_tree="some-uuid"), 1)


def test_an_unknown_commit_is_refused_before_anything_starts(tmp_path, capsys):
    code = ab.main(["no-such-commit", "--engines", "sqlite", "--work-dir", str(tmp_path),
                    "--results-dir", str(tmp_path / "out")])
    assert code == 2
    assert "unknown commit 'no-such-commit' (git: fatal:" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_commits_whose_schemas_differ_are_refused():
    changed = subprocess.run(["git", "-C", ab.REPO, "log", "-1", "--format=%H", "--",
                              ab.MIGRATIONS], capture_output=True, text=True,
                             check=True).stdout.strip()
    try:
        parent = ab.resolve(f"{changed}~1")
    except ab.Refused:
        pytest.skip("the history before the last schema change is not in this clone")
    with pytest.raises(ab.Refused, match="the sql schema differs between"):
        ab.check_schemas(parent, ab.resolve("HEAD"))


@pytest.mark.parametrize(("argv", "said"), [
    (["HEAD", "--rounds", "0"], "'0' is not a whole number of at least 1"),
    (["HEAD", "--calls", "x"], "'x' is not a whole number of at least 1"),
    (["HEAD", "--clouds", "flat,nested"], "unknown cloud nested; choose from flat, worst"),
    (["HEAD", "--engines", "oracle"], "unknown engine oracle; choose from sqlite"),
])
def test_bad_options_are_refused_with_the_reason(argv, said, capsys):
    with pytest.raises(SystemExit) as exited:
        ab.parse_args(argv)
    assert exited.value.code == 2
    assert said in capsys.readouterr().err
