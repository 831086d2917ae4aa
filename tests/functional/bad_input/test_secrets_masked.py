"""No secret of the configuration reaches an operator's screen or log file:
each configuration error is driven with a password in it, as an operator
meets it (a separate ``rtf`` process, ``--log-file``, ``-v`` and ``--debug``),
and every line printed or logged is searched for it."""

from __future__ import annotations

import subprocess
import sys

import pytest

SECRET = "Pa55w0rd-S3cret"
URL = f"postgresql+psycopg2://rtf:{SECRET}@127.0.0.1"

# (what is wrong, the settings, the command, what the message names).
# A message that quotes a connection setting shows its secret masked.
CASES = [
    ("malformed port", f"[database]\nconnection = {URL}:54x32/rtf\n",
     ["check"], "is the port a number?"),
    ("malformed port, placement", f"[placement_database]\nconnection = {URL}:54x32/rtf\n",
     ["providers", "list"], "[placement_database] connection"),
    ("unknown dialect", f"[database]\nconnection = nosuch://rtf:{SECRET}@127.0.0.1/rtf\n",
     ["check"], "unknown database dialect"),
    ("driver not installed",
     f"[database]\nconnection = mysql+mysqldb://rtf:{SECRET}@127.0.0.1/rtf\n",
     ["check"], "database driver is not installed"),
    ("not a URL", f"[database]\nconnection = {SECRET}\n", ["check"], "not a database URL"),
    ("server not there", f"[database]\nconnection = {URL}:1/rtf\n",
     ["check"], "cannot use the [database] connection"),
    ("keystone password, service not there",
     "[placement]\nbackend = http\nauth_type = password\n"
     f"auth_url = http://127.0.0.1:1/v3\nusername = rtf\npassword = {SECRET}\n"
     "project_name = service\nuser_domain_name = Default\nproject_domain_name = Default\n",
     ["providers", "list"], "placement"),
    ("a / and an @ in the password",
     "[database]\nconnection = postgresql+psycopg2://rtf:a/b@" + SECRET + "@127.0.0.1:54x32/rtf\n",
     ["check"], "is the port a number?"),
    ("a line oslo.config cannot parse", f"[database]\n  connection = {URL}/rtf\n",
     ["check"], "cannot parse"),
    ("admin token, service not there",
     "[placement]\nbackend = http\nauth_type = admin_token\n"
     f"endpoint_override = http://127.0.0.1:1\ntoken = {SECRET}\n",
     ["providers", "list"], "placement"),
]


@pytest.mark.parametrize("verbosity", [[], ["-v", "--debug"]], ids=["quiet", "debug"])
@pytest.mark.parametrize("settings,command,names", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_a_secret_in_a_bad_setting_is_never_shown(tmp_path, settings, command, names,
                                                  verbosity):
    ini = tmp_path / "rtf.conf"
    ini.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\nhost = h1\n{settings}")
    log = tmp_path / "rtf.log"
    done = subprocess.run(
        [sys.executable, "-m", "rtframework.cmd.main", "--config-file", str(ini),
         "--log-file", str(log), *verbosity, *command],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    shown = done.stdout + done.stderr + (log.read_text() if log.exists() else "")
    assert done.returncode != 0, shown
    assert names in shown, shown
    assert SECRET not in shown, shown
    if "connection" in settings and names != "cannot parse":
        assert "***" in shown, shown


def test_a_short_password_does_not_mask_the_words_that_contain_it():
    # A password of "1" hides the password, not every 1 in uuids and counts.
    from rtframework import conf as rtconf
    from rtframework.conf import secrets

    conf = rtconf.new_conf()
    conf([], project="rtframework", default_config_files=[])
    conf.set_override("connection", "postgresql+psycopg2://rtf:1@db1/rtf", group="database")
    text = ("consumer 1a2b3c4d-0001-4000-8000-000000000001: 10 of 1 "
            "postgresql+psycopg2://rtf:1@db1/rtf")
    assert secrets.mask(text, conf) == (
        "consumer 1a2b3c4d-0001-4000-8000-000000000001: 10 of *** "
        "postgresql+psycopg2://rtf:***@db1/rtf")
