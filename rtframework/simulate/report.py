"""What a soak prints at the end, and its plot."""

from __future__ import annotations

import prettytable

from rtframework.simulate import ops
from rtframework.simulate.runner import Result

OUTCOMES = ("ok", "refused", "interrupted", "error")


def operations_table(result: Result) -> str:
    table = prettytable.PrettyTable(["Operation", *OUTCOMES, "total"])
    table.align = "r"
    table.align["Operation"] = "l"
    for kind in ops.KINDS:
        counts = [result.outcomes.get((kind, o), 0) for o in OUTCOMES]
        if any(counts):
            table.add_row([kind, *counts, sum(counts)])
    totals = [sum(n for (_, o), n in result.outcomes.items() if o == out) for out in OUTCOMES]
    table.add_row(["all", *totals, sum(totals)])
    return table.get_string()


def summary_table(result: Result) -> str:
    opts = result.options
    obs = result.observations
    table = prettytable.PrettyTable(["What", "Value"])
    table.align = "l"
    flips = sum(obs.flips.values())
    rows = [
        ("mode", ("processes" if opts.processes else "threads")
         + (" + chaos" if opts.chaos else "")),
        ("hosts", opts.hosts),
        ("operations", len(result.ops)),
        ("seed", result.seed),
        ("claim strategy", opts.strategy),
        ("conflicts retried", result.conflicts),
        ("invariant check passes", obs.passes),
        ("invariant checks that failed", obs.errors),
        ("violations during the run", len(obs.violations)),
        ("violations after the final restart", len(result.final)),
        ("allocation flips", f"{flips} ({len(obs.flips)} instances)"),
        ("wall time", f"{result.wall_time:.1f}s"),
    ]
    if opts.chaos:
        rows[7:7] = [
            ("hosts killed (SIGKILL)", result.kills),
            ("generation bumps", result.bumps),
            ("transient findings while hosts were down",
             ", ".join(f"{k} {n}" for k, n in sorted(result.transient.items())) or "none"),
        ]
    for row in rows:
        table.add_row(row)
    return table.get_string()


def violations_table(result: Result) -> str:
    table = prettytable.PrettyTable(["When", "Kind", "Consumer", "Provider", "Detail"])
    table.align = "l"
    for finding in result.observations.violations:
        table.add_row(["during", finding.kind, finding.consumer_uuid or "",
                       finding.provider_uuid or "", finding.detail])
    for finding in result.final:
        table.add_row(["final", finding.kind, finding.consumer_uuid or "",
                       finding.provider_uuid or "", finding.detail])
    return table.get_string()


def flips_table(result: Result) -> str:
    table = prettytable.PrettyTable(["Instance", "Flips"])
    for uuid, count in result.observations.flips.most_common():
        table.add_row([uuid, count])
    return table.get_string()


def require_plotting() -> None:
    """Raise ValueError naming the extra to install when no plot can be drawn."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ValueError("--plot needs matplotlib, which is not installed: "
                         "pip install -e '.[plot]'") from None


def plot(result: Result, path: str) -> None:
    """Used VCPU of each host over time, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    samples = result.observations.samples
    hosts = sorted({h for _, by_host in samples for h in by_host})
    figure, axes = pyplot.subplots(figsize=(10, 5))
    for host in hosts:
        axes.plot([t for t, _ in samples], [s.get(host, 0) for _, s in samples],
                  label=host, linewidth=0.8)
    axes.set_xlabel("seconds")
    axes.set_ylabel("used VCPU")
    axes.set_title(f"{len(result.ops)} operations on {result.options.hosts} hosts "
                   f"(seed {result.seed})")
    if len(hosts) <= 12:
        axes.legend(fontsize="small", ncol=2)
    figure.tight_layout()
    figure.savefig(path, format="png")
    pyplot.close(figure)
