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
# The messages of the first six quote the setting: with its secret masked.
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
    if "connection" in settings:
        assert "***" in shown, shown
