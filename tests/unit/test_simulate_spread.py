"""Soak hosts spread over the nodes of a multi-host database URL."""

from __future__ import annotations

import logging

import pytest
import sqlalchemy as sa

from rtframework.cmd.main import main
from rtframework.simulate import hosts, runner, spread

URL = ("mysql+pymysql://rtf:s%40cret@/placement"
       "?host=db1:3306&host=db2:3307&host=db3:3308&charset=utf8mb4")


def test_host_i_names_node_i_mod_n_first_then_the_others_in_order():
    firsts = [spread.database_hosts(spread.url_for(URL, i)) for i in range(4)]
    assert firsts == [["db1:3306", "db2:3307", "db3:3308"],
                      ["db2:3307", "db3:3308", "db1:3306"],
                      ["db3:3308", "db1:3306", "db2:3307"],
                      ["db1:3306", "db2:3307", "db3:3308"]]
    parsed = sa.make_url(spread.url_for(URL, 1))
    assert (parsed.username, parsed.password, parsed.database) == ("rtf", "s@cret", "placement")
    assert parsed.query["charset"] == "utf8mb4"
    assert spread.first_host(spread.url_for(URL, 2)) == "db3:3308"


def test_a_host_gets_its_own_url_for_both_databases():
    settings = spread.host_settings([("database", "connection", URL)], URL, 2)
    conf = hosts.build_conf(settings)
    assert spread.first_host(conf.database.connection) == "db3:3308"
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
