"""What a soak prints at the end, its plot and its HTML report."""

from __future__ import annotations

import prettytable

from rtframework.simulate import dbnodes, ops
from rtframework.simulate.options import Result

OUTCOMES = ops.OUTCOME_KINDS
# Column titles: a fault is a dropped database connection under the
# operation (its host then settles it); interrupted is cut short by a kill.
TITLES = ("ok", "refused", "db fault", "killed", "error")


def operations_table(result: Result) -> str:
    return _operations(result).get_string()


def summary_table(result: Result) -> str:
    return _summary(result).get_string()


def violations_table(result: Result) -> str:
    return _violations(result).get_string()


def flips_table(result: Result) -> str:
    return _flips(result).get_string()


def _operations(result: Result) -> prettytable.PrettyTable:
    table = prettytable.PrettyTable(["Operation", *TITLES, "total"])
    table.align = "r"
    table.align["Operation"] = "l"
    for kind in ops.KINDS:
        counts = [result.outcomes.get((kind, o), 0) for o in OUTCOMES]
        if any(counts):
            table.add_row([kind, *counts, sum(counts)])
    totals = [sum(n for (_, o), n in result.outcomes.items() if o == out) for out in OUTCOMES]
    table.add_row(["all", *totals, sum(totals)])
    return table


def _summary(result: Result) -> prettytable.PrettyTable:
    opts = result.options
    obs = result.observations
    table = prettytable.PrettyTable(["What", "Value"])
    table.align = "l"
    flips = sum(obs.flips.values())
    rows = [
        ("mode", ("processes" if opts.processes else "threads")
         + (" + chaos" if opts.chaos else "")),
        ("hosts", opts.hosts),
        ("cloud", opts.cloud),
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
            ("operations cut short by a kill",
             ", ".join(f"{kind} {n}" for kind in ops.KINDS
                       if (n := result.outcomes.get((kind, ops.INTERRUPTED), 0)))
             or "none"),
            ("host outages (no heartbeat for longer than service_down_time)",
             f"{result.outages} ({result.outage_returns} came back; "
             f"service_down_time {opts.down_after}s)" if opts.outages else "off"),
            ("evacuations during outages",
             ", ".join(f"{title} {n}" for out, title in zip(OUTCOMES, TITLES, strict=True)
                       if (n := result.outcomes.get((ops.OUTAGE_EVACUATE, out), 0)))
             or "none"),
            ("evacuations cleaned up by the returning host", result.outage_cleaned),
            ("findings about a host being restarted (left to its restart)",
             ", ".join(f"{k} {n}" for k, n in sorted(result.transient.items())) or "none"),
        ]
    if opts.spread_hosts:
        nodes = len(dbnodes.database_hosts(opts.database_url))
        rows.insert(2, ("database nodes", f"{nodes}, host i writes through node i mod {nodes}"))
    for row in rows:
        table.add_row(row)
    return table


def _violations(result: Result) -> prettytable.PrettyTable:
    table = prettytable.PrettyTable(["When", "Kind", "Consumer", "Provider", "Detail"])
    table.align = "l"
    for finding in result.observations.violations:
        table.add_row(["during", finding.kind, finding.consumer_uuid or "",
                       finding.provider_uuid or "", finding.detail])
    for finding in result.final:
        table.add_row(["final", finding.kind, finding.consumer_uuid or "",
                       finding.provider_uuid or "", finding.detail])
    return table


def _flips(result: Result) -> prettytable.PrettyTable:
    table = prettytable.PrettyTable(["Instance", "Flips"])
    for uuid, count in result.observations.flips.most_common():
        table.add_row([uuid, count])
    return table


def require_plotting() -> None:
    """Raise ValueError naming the extra to install when no plot can be drawn."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ValueError("--plot and --report need matplotlib, which is not installed: "
                         "pip install -e '.[plot]'") from None


CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB")
_COLOURS = {"VCPU": "tab:blue", "MEMORY_MB": "tab:green", "DISK_GB": "tab:orange"}


def _figure(result: Result):
    """Small multiples, one panel per host: each class's use as a share of
    its capacity, the share held for moves in flight as a band under the
    line (a double claim shows as the band), host kills as red lines and
    violations as black crosses."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    obs = result.observations
    timeline = obs.timeline
    hosts = sorted({h for _, by_host in timeline for h in by_host})
    columns = min(4, max(1, len(hosts)))
    rows = max(1, -(-len(hosts) // columns))
    figure, axes = pyplot.subplots(rows, columns, figsize=(3.6 * columns, 2.4 * rows + 0.8),
                                   sharex=True, sharey=True, squeeze=False)
    times = [t - result.started_at for t, _ in timeline]
    for index, host in enumerate(hosts):
        ax = axes[index // columns][index % columns]
        for rc in CLASSES:
            share, held = [], []
            for _, by_host in timeline:
                sample = by_host.get(host)
                cap = sample.capacity.get(rc, 0) if sample else 0
                used = sample.used.get(rc, 0) if sample else 0
                moving = min(sample.moving.get(rc, 0), used) if sample else 0
                share.append(100.0 * used / cap if cap else 0.0)
                held.append(100.0 * (used - moving) / cap if cap else 0.0)
            ax.plot(times, share, color=_COLOURS[rc], linewidth=0.9, label=rc)
            ax.fill_between(times, held, share, color=_COLOURS[rc], alpha=0.25, linewidth=0)
        ax.axhline(100, color="grey", linewidth=0.8, linestyle=":")
        for began, ended, out in result.outage_marks:
            if out == host:
                ax.axvspan(began - result.started_at,
                           (ended or began) - result.started_at, color="grey", alpha=0.3)
        for at, killed in result.kill_marks:
            if killed == host:
                ax.axvline(at - result.started_at, color="red", linewidth=0.7, alpha=0.7)
        marks = [at - result.started_at for at, where, _ in obs.violation_marks if where == host]
        if marks:
            ax.plot(marks, [102] * len(marks), "kx", markersize=7)
        ax.set_title(host, fontsize="small")
        ax.set_ylim(0, 110)
    for index in range(len(hosts), rows * columns):
        axes[index // columns][index % columns].axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("seconds")
    for row in axes:
        row[0].set_ylabel("% of capacity")
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="upper right", fontsize="small", ncol=len(CLASSES))
    figure.suptitle(
        f"{len(result.ops)} operations on {result.options.hosts} hosts (seed {result.seed}): "
        f"used / capacity; band = held for moves in flight; red = host killed; "
        f"grey = host out; "
        f"x = violation", fontsize="small", x=0.01, ha="left")
    figure.tight_layout(rect=(0, 0, 1, 0.93))
    return figure, pyplot


def plot(result: Result, path: str) -> None:
    """Write the small multiples as a PNG."""
    figure, pyplot = _figure(result)
    figure.savefig(path, format="png", dpi=100)
    pyplot.close(figure)


def html_report(result: Result, path: str) -> None:
    """One self-contained HTML file: the verdict, the plot (inline PNG) and
    every table the soak prints."""
    import base64
    import html
    import io

    figure, pyplot = _figure(result)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    pyplot.close(figure)
    image = base64.b64encode(buffer.getvalue()).decode("ascii")
    verdict = (f"{len(result.violations)} violations" if result.violations
               else "no violations")
    tables = [("Operations", _operations(result)), ("Summary", _summary(result))]
    if result.observations.flips:
        tables.append(("Allocation flips", _flips(result)))
    if result.violations:
        tables.append(("Violations", _violations(result)))
    body = "".join(f"<h2>{html.escape(title)}</h2>\n{table.get_html_string()}\n"
                   for title, table in tables)
    page = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>rtf simulate: {html.escape(verdict)}</title>
<style>body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 8px;text-align:left}} img{{max-width:100%}}</style>
</head><body>
<h1>Soak: {html.escape(verdict)}</h1>
<p>{len(result.ops)} operations on {result.options.hosts} hosts, seed {result.seed},
{result.wall_time:.1f} s.</p>
<img alt="used versus capacity per host" src="data:image/png;base64,{image}">
{body}</body></html>
"""
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
