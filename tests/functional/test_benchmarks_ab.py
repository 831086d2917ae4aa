"""`python -m benchmarks.ab`: two commits searched side by side on one
database. Its arithmetic, its refusals, and a small run end to end. No
timing is asserted."""

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


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ab")
    code = ab.main(["HEAD", "HEAD", "--engines", "sqlite", "--providers", "60", "--rounds", "3",
                    "--restart-every", "2", "--calls", "2", "--work-dir", str(tmp),
                    "--results-dir", str(tmp / "out")])
    (path,) = glob.glob(str(tmp / "out" / "ab-*.json"))
    with open(path) as f:
        return code, json.load(f), str(tmp), _worktrees()


@pytest.mark.slow
def test_a_commit_against_itself_gives_the_same_answers_in_every_case(run):
    code, document, _tmp, _worktrees = run
    assert code == 0
    assert document["base"] == document["head"]
    ratios = [f for f in document["figures"] if f["case"].endswith("head/base")]
    cases = [f["case"].removesuffix(" head/base") for f in ratios]
    assert len(cases) == 6 + 2 + 2  # flat, worst, trees
    assert {"limit=1000", "worst limit=10", "trees limit=1000"} <= set(cases)
    for figure in ratios:
        assert figure["detail"].endswith("; same answers")
        assert figure["low"] <= figure["value"] <= figure["high"]


@pytest.mark.slow
def test_every_round_has_both_sides_and_the_calls_asked_for(run):
    _code, document, _tmp, _worktrees = run
    assert len(document["samples"]) == 10
    for case, sides in document["samples"].items():
        assert set(sides) == {"base", "head"}, case
        for rounds in sides.values():
            assert len(rounds) == 3
            assert all(len(r["wall_ms"]) == 2 and len(r["cpu_ms"]) == 2 for r in rounds)


@pytest.mark.slow
def test_the_temporary_checkouts_are_removed(run):
    _code, _document, tmp, worktrees = run
    assert tmp not in worktrees


def _round(*wall_ms: float) -> dict:
    return {"wall_ms": list(wall_ms), "cpu_ms": [1.0] * len(wall_ms), "found": 3}


def test_the_ratio_is_taken_per_round_and_the_winner_counted():
    samples = {"base": [_round(10, 10), _round(20, 20), _round(10, 10)],
               "head": [_round(5, 5), _round(30, 30), _round(9, 9)]}
    digests = {side: {"same"} for side in ab.SIDES}
    report = ab.summarise("sqlite", "limit=10", samples, digests)
    ratio = report.find(ab.BENCH, "sqlite", "limit=10 head/base")
    assert (ratio.value, ratio.low, ratio.high) == (0.9, 0.5, 1.5)
    assert ratio.detail == "head faster in 2 of 3 rounds (sign test p=1); same answers"
    base = report.find(ab.BENCH, "sqlite", "limit=10 base p50")
    assert (base.value, base.low, base.high) == (10, 10, 20)
    assert not report.notes


def test_answers_that_differ_are_said():
    samples = {side: [_round(1.0)] for side in ab.SIDES}
    for digests, said in (({"base": {"aaaa"}, "head": {"bbbb"}}, "base aaaa; head bbbb"),
                          ({"base": {"aaaa", "cccc"}, "head": {"aaaa"}},
                           "base aaaa, cccc; head aaaa")):
        report = ab.summarise("postgresql", "trees limit=10", samples, digests)
        assert report.find(ab.BENCH, "postgresql", "trees limit=10 head/base").detail.endswith(
            "ANSWERS DIFFER")
        assert report.notes == [f"postgresql trees limit=10: the answers DIFFER (digests: {said})"]


def test_the_sign_test_is_two_sided_and_leaves_ties_out():
    assert ab.sign_test(0, 0) == 1.0
    assert ab.sign_test(10, 10) == 1.0
    assert ab.sign_test(3, 0) == 0.25  # 2 * (1/2)**3
    assert ab.sign_test(0, 3) == 0.25
    assert ab.sign_test(15, 5) == pytest.approx(0.0414, abs=1e-4)
    assert ab.sign_test(14, 6) == pytest.approx(0.1153, abs=1e-4)


def test_the_digest_ignores_the_order_of_candidates_but_not_their_content():
    def answer(*providers: str, used: int = 2) -> t.AllocationCandidates:
        return t.AllocationCandidates(
            allocation_requests=tuple(t.AllocationRequest({p: {"VCPU": used}})
                                      for p in providers),
            provider_summaries={})

    assert ab_worker.digest(answer("a", "b")) == ab_worker.digest(answer("b", "a"))
    assert ab_worker.digest(answer("a", "b")) != ab_worker.digest(answer("a", "b", used=3))
    assert ab_worker.digest(answer("a", "b")) != ab_worker.digest(answer("a"))


def test_an_unknown_commit_is_refused_before_anything_starts(tmp_path, capsys):
    code = ab.main(["no-such-commit", "--engines", "sqlite", "--work-dir", str(tmp_path),
                    "--results-dir", str(tmp_path / "out")])
    assert code == 2
    assert "unknown commit 'no-such-commit'" in capsys.readouterr().err
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


@pytest.mark.parametrize("argv", [["HEAD", "--rounds", "0"], ["HEAD", "--calls", "x"],
                                  ["HEAD", "--clouds", "flat,nested"],
                                  ["HEAD", "--engines", "oracle"]])
def test_bad_options_are_refused(argv):
    with pytest.raises(SystemExit):
        ab.parse_args(argv)
