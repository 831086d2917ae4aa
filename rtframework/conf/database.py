"""Options of the [database] (compute records) and [placement_database] groups."""

from oslo_config import cfg

from rtframework.conf.groups import register_group

database_group = cfg.OptGroup(
    "database",
    title="Compute records database",
    help="Where instances, migrations and compute nodes are recorded. "
    "Hosts that share a cloud share this database.",
)
placement_database_group = cfg.OptGroup(
    "placement_database",
    title="Placement database (sql backend)",
    help="Database of the 'sql' placement backend.",
)


def _opts(default_file: str) -> list[cfg.Opt]:
    return [
        cfg.StrOpt(
            "connection",
            secret=True,
            sample_default=f"sqlite:///$state_path/{default_file}",
            help="SQLAlchemy URL. Unset means an embedded SQLite file "
            f"'{default_file}' under state_path (WAL mode), which needs no "
            "server but serves one machine; use postgresql+psycopg2:// or "
            "mysql+pymysql:// URLs when several hosts share it. For a MySQL/"
            "MariaDB Galera cluster, name every node: mysql+pymysql://user:pw@/"
            "db?host=node1:3306&host=node2:3306 (the first that serves is used).",
        ),
        cfg.IntOpt(
            "pool_size", default=5, min=1,
            help="Connections kept open per process (server databases only). "
            "On PostgreSQL 12 and newer, [placement_database] keeps a second "
            "pool, as large (pool_size and max_overflow), for its one-statement "
            "allocation writes (their sessions plan that statement once, "
            "without sequential scans).",
        ),
        cfg.IntOpt(
            "max_overflow", default=10, min=0,
            help="Connections opened beyond pool_size under load.",
        ),
        cfg.IntOpt(
            "wsrep_sync_wait", default=1, min=0, max=15,
            help="On a MariaDB Galera node, the session's wsrep_sync_wait. 1 "
            "(causal reads) makes every read wait until the node has applied "
            "what other nodes committed before it, so a heal after a move "
            "committed through another node, 'rtf check' and 'rtf audit' never "
            "act on a node that lags; 0 reads whatever the node has applied. "
            "Ignored by servers without wsrep.",
        ),
        cfg.BoolOpt(
            "auto_sync", default=True,
            help="Run the schema migrations when the database is opened. "
            "Turn off to require an explicit 'rtf db sync'.",
        ),
    ]


DATABASE_OPTS = _opts("compute.sqlite")
PLACEMENT_DATABASE_OPTS = _opts("placement.sqlite")


def register_opts(conf: cfg.ConfigOpts) -> None:
    register_group(conf, database_group)
    conf.register_opts(DATABASE_OPTS, group=database_group)
    register_group(conf, placement_database_group)
    conf.register_opts(PLACEMENT_DATABASE_OPTS, group=placement_database_group)


def list_opts():
    return {database_group: DATABASE_OPTS, placement_database_group: PLACEMENT_DATABASE_OPTS}
