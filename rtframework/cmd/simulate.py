"""``rtf simulate``: the race soak (see :mod:`rtframework.simulate.runner`)."""

from __future__ import annotations

import logging
import sys

from cliff.command import Command
from tqdm import tqdm

from rtframework.simulate import cloud, database, report, runner


class Simulate(Command):
    """Soak test: fake hosts race random operations under the invariant checker.

    N fake hosts run their periodic update flat out while random operations
    race them; exit status 1 on any violation.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        defaults = runner.Options()
        parser.add_argument("--hosts", type=int, default=defaults.hosts,
                            help=f"Compute hosts (default {defaults.hosts}).")
        parser.add_argument("--operations", type=int, default=defaults.operations,
                            help=f"Random operations (default {defaults.operations}).")
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
        parser.add_argument("--kill-rate", type=float, default=defaults.kill_rate,
                            help="Chance that an operation's host is killed while it runs "
                            "(chaos; default %(default)s).")
        parser.add_argument("--db-fault-rate", type=float, default=defaults.db_fault_rate,
                            help="Share of a host's SQL statements that fail like a "
                            "dropped connection (chaos; default %(default)s).")
        parser.add_argument("--outage-rate", type=float, default=defaults.outage_rate,
                            help="Chance before each operation that a host stops reporting "
                            "until it counts as down, has its instances evacuated and "
                            "comes back (chaos; default %(default)s; 0: none).")
        parser.add_argument("--service-down-time", type=int,
                            default=defaults.service_down_time,
                            help="Seconds without a heartbeat after which a host is down, "
                            "when outages are on (default %(default)s).")
        parser.add_argument("--recheck-delay", type=float, default=defaults.recheck_delay,
                            help="Seconds before a finding is re-checked (default "
                            "%(default)s); only findings seen twice count.")
        parser.add_argument("--periodic-pause", type=float, default=defaults.periodic_pause,
                            help="Seconds a host waits between two periodic runs (default "
                            "%(default)s): enough for the operations to get a turn on "
                            "a small machine.")
        parser.add_argument("--check-interval", type=float, default=defaults.check_interval,
                            help="Seconds between two invariant checks (default "
                            "%(default)s).")
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
            hosts=parsed_args.hosts, operations=parsed_args.operations, seed=parsed_args.seed,
            strategy=parsed_args.strategy, processes=parsed_args.processes,
            cloud=parsed_args.cloud,
            chaos=parsed_args.chaos, database_url=url, spread_hosts=parsed_args.spread_hosts,
            recheck_delay=parsed_args.recheck_delay,
            kill_rate=parsed_args.kill_rate, db_fault_rate=parsed_args.db_fault_rate,
            outage_rate=parsed_args.outage_rate,
            service_down_time=parsed_args.service_down_time,
            periodic_pause=parsed_args.periodic_pause,
            check_interval=parsed_args.check_interval,
            quiet_hosts=self.app.options.verbose_level <= 1)
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
