"""``rtf simulate``: the race soak (see :mod:`rtframework.simulate.runner`)."""

from __future__ import annotations

import logging
import sys

from cliff.command import Command
from tqdm import tqdm

from rtframework.simulate import cloud, database, report, runner

# The soak's numbers: a field of runner.Options (the flag is its name with
# dashes; its type and default are the field's) and the flag's help.
_NUMBERS = (
    ("hosts", "Compute hosts (default %(default)s)."),
    ("operations", "Random operations (default %(default)s)."),
    ("kill_rate", "Chance that an operation's host is killed while it runs (chaos; "
     "default %(default)s)."),
    ("db_fault_rate", "Share of a host's SQL statements that fail like a dropped "
     "connection (chaos; default %(default)s)."),
    ("outage_rate", "Chance before each operation that a host stops reporting until it "
     "counts as down, has its instances evacuated and comes back (chaos; default "
     "%(default)s; 0: none)."),
    ("service_down_time", "Seconds without a heartbeat after which a host is down, when "
     "outages are on (default %(default)s)."),
    ("recheck_delay", "Seconds before a finding is re-checked (default %(default)s); only "
     "findings seen twice count."),
    ("periodic_pause", "Seconds a host waits between two periodic runs (default "
     "%(default)s): enough for the operations to get a turn on a small machine."),
    ("check_interval", "Seconds between two invariant checks (default %(default)s)."),
)
# Fields of runner.Options taken as they are parsed.
_AS_PARSED = ("seed", "strategy", "processes", "cloud", "chaos", "spread_hosts",
              *(name for name, _ in _NUMBERS))


class Simulate(Command):
    """Soak test: fake hosts race random operations under the invariant checker.

    N fake hosts run their periodic update flat out while random operations
    race them; exit status 1 on any violation.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        defaults = runner.Options()
        for name, text in _NUMBERS:
            default = getattr(defaults, name)
            parser.add_argument("--" + name.replace("_", "-"), type=type(default),
                                default=default, help=text)
        parser.add_argument("--seed", type=int,
                            help="Seed: in thread mode the same seed runs the same "
                            "operations in the same order.")
        parser.add_argument("--strategy", choices=("doubled", "migration"),
                            default=defaults.strategy,
                            help="Move claim strategy (default %(default)s).")
        parser.add_argument("--cloud", choices=cloud.SHAPES, default=defaults.cloud,
                            help="Shape of the hosts (default %(default)s): 'nested' gives "
                            "each host NUMA children (MEMORY_MB) and GPU children (VGPU, "
                            "flavors with a VGPU join the mix) and takes DISK_GB from one "
                            "storage pool all hosts share.")
        parser.add_argument("--processes", action="store_true",
                            help="One process per host over a shared PostgreSQL/MySQL "
                            "database (--database-url).")
        parser.add_argument("--chaos", action="store_true",
                            help="Inject faults: SIGKILL and restart host processes "
                            "(with --processes), failing database statements, "
                            "concurrent generation bumps, host outages.")
        parser.add_argument("--database-url",
                            help="Database for records and placement (default: "
                            "[database] connection of the configuration; thread mode "
                            "without one uses SQLite in a temporary directory).")
        parser.add_argument("--spread-hosts", action="store_true",
                            help="With a --database-url naming several hosts (a Galera "
                            "cluster: ?host=db1:3306&host=db2:3306&...), host i names the "
                            "(i mod n)-th first: the multi-writer set-up. Default: every "
                            "host uses the URL as given (one writing node).")
        parser.add_argument("--plot", metavar="FILE",
                            help="Write a PNG with one panel per host: used against "
                            "capacity per class, moves in flight as a band, host kills "
                            "and violations marked (needs the [plot] extra).")
        parser.add_argument("--report", metavar="FILE",
                            help="Write one self-contained HTML file with the plot and "
                            "every table (needs the [plot] extra).")
        parser.add_argument("--no-progress", action="store_true",
                            help="No progress bar.")
        return parser

    def take_action(self, parsed_args):
        url = parsed_args.database_url
        if url is None and parsed_args.processes:
            url = self.app.conf.database.connection
        if self.app.options.verbose_level <= 1:
            # Hosts warn about every lost race and heal finding; the table says it all.
            logging.getLogger("rtframework").setLevel(logging.ERROR)
        options = runner.Options(
            database_url=url, quiet_hosts=self.app.options.verbose_level <= 1,
            **{name: getattr(parsed_args, name) for name in _AS_PARSED})
        try:
            if parsed_args.plot or parsed_args.report:
                # Before the run, not after minutes of it.
                report.require_plotting()
            soak = runner.Soak(options)
            if url and database.ensure_database(url):
                self.app.stderr.write(f"rtf simulate: created database {url}\n")
        except ValueError as exc:
            self.app.stderr.write(f"rtf simulate: {exc}\n")
            return 2
        bar = tqdm(total=options.operations, file=sys.stderr, unit="op",
                   disable=parsed_args.no_progress, desc="soak")
        with bar:
            result = soak.run(lambda op, outcome: bar.update(1))
        out = self.app.stdout
        out.write(report.operations_table(result) + "\n")
        out.write(report.summary_table(result) + "\n")
        if result.observations.flips:
            out.write(report.flips_table(result) + "\n")
        if result.violations:
            out.write(report.violations_table(result) + "\n")
        if parsed_args.plot:
            report.plot(result, parsed_args.plot)
            out.write(f"plot written to {parsed_args.plot}\n")
        if parsed_args.report:
            report.html_report(result, parsed_args.report)
            out.write(f"report written to {parsed_args.report}\n")
        # A checker that never completed a pass proved nothing.
        blind = result.observations.passes == 0 and result.observations.errors > 0
        return 1 if result.violations or result.errors or blind else 0
