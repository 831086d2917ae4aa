"""Soak hosts spread over the nodes of a multi-host database URL."""

from __future__ import annotations

import logging

import pytest
import sqlalchemy as sa

from rtframework.cmd.main import main
from rtframework.simulate import dbnodes, hosts, runner

URL = ("mysql+pymysql://rtf:s%40cret@/placement"
       "?host=db1:3306&host=db2:3307&host=db3:3308&charset=utf8mb4")


def test_host_i_names_node_i_mod_n_first_then_the_others_in_order():
    firsts = [dbnodes.database_hosts(dbnodes.url_for(URL, i)) for i in range(4)]
    assert firsts == [["db1:3306", "db2:3307", "db3:3308"],
                      ["db2:3307", "db3:3308", "db1:3306"],
                      ["db3:3308", "db1:3306", "db2:3307"],
                      ["db1:3306", "db2:3307", "db3:3308"]]
    parsed = sa.make_url(dbnodes.url_for(URL, 1))
    assert (parsed.username, parsed.password, parsed.database) == ("rtf", "s@cret", "placement")
    assert parsed.query["charset"] == "utf8mb4"
    assert dbnodes.first_host(dbnodes.url_for(URL, 2)) == "db3:3308"


def test_a_host_gets_its_own_url_for_both_databases():
    settings = dbnodes.host_settings([("database", "connection", URL)], URL, 2)
    conf = hosts.build_conf(settings)
    assert dbnodes.first_host(conf.database.connection) == "db3:3308"
    assert conf.placement_database.connection == conf.database.connection


@pytest.mark.parametrize("url, why", [
    (None, "needs --database-url"),
    ("postgresql+psycopg2://u@/db?host=a:5432&host=b:5432", "not postgresql"),
    ("mysql+pymysql://root@db1:3306/placement", "naming several hosts"),
    ("mysql+pymysql://root@/placement?host=db1:3306", "naming several hosts"),
])
def test_spreading_refuses_a_url_without_several_mysql_hosts(url, why):
    with pytest.raises(ValueError, match=why):
        runner.Soak(runner.Options(processes=url is not None, database_url=url,
                                   spread_hosts=True))


def test_rtf_simulate_refuses_to_spread_over_one_host(tmp_path, capsys):
    root = logging.getLogger()
    handlers = list(root.handlers)
    root.handlers[:] = []
    url = f"sqlite:///{tmp_path / 'soak.sqlite'}"
    try:
        code = main(["simulate", "--spread-hosts", "--database-url", url, "--no-progress"])
    finally:
        root.handlers[:] = handlers
    assert code == 2
    assert "naming several hosts" in capsys.readouterr().err
    assert not (tmp_path / "soak.sqlite").exists()  # nothing created


class _Flaky:
    def __init__(self, failures: int, error: Exception) -> None:
        self.failures = failures
        self.error = error
        self.calls = 0
        self.engine = "the engine"

    def list_instances(self, host=None):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return [host]


LOST = sa.exc.OperationalError("SELECT 1", {}, ConnectionError("lost connection"))


def test_steady_re_runs_a_call_whose_connection_was_cut():
    flaky = _Flaky(2, LOST)
    steady = dbnodes.Steady(flaky, seconds=5, pause=0)
    assert steady.list_instances(host="h") == ["h"]
    assert flaky.calls == 3
    assert steady.engine == "the engine"


def test_steady_gives_up_after_its_time_and_never_retries_other_errors():
    with pytest.raises(sa.exc.OperationalError):
        dbnodes.Steady(_Flaky(10**6, LOST), seconds=0.05, pause=0.01).list_instances()
    flaky = _Flaky(1, ValueError("a bug"))
    with pytest.raises(ValueError):
        dbnodes.Steady(flaky, seconds=5, pause=0).list_instances()
    assert flaky.calls == 1
