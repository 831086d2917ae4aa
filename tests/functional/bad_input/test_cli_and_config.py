"""Bad command-line arguments, configuration values and database settings:
exit status, a message naming the offending argument, option or value, and
no row changed."""

from __future__ import annotations

import pytest

from tests.functional.bad_input.conftest import BASE_INI, one_line

LONG = "x" * 256
FAR = str(2**31)

# (arguments, what the message must name). All are usage errors: exit 2.
BAD_ARGUMENTS = [
    (["boot", "", "--flavor-vcpus", "1"], "argument name: must not be empty"),
    (["boot", "   ", "--flavor-vcpus", "1"], "argument name: must not be empty"),
    (["boot", " web", "--flavor-vcpus", "1"], "argument name: must not start or end"),
    (["boot", LONG, "--flavor-vcpus", "1"], "argument name: must be at most 255"),
    (["boot", "x" * 10240, "--flavor-vcpus", "1"], "10240 characters"),
    (["boot", "a", "--flavor-vcpus", "0"], "argument --flavor-vcpus: must be from 1"),
    (["boot", "a", "--flavor-vcpus", "-1"], "argument --flavor-vcpus"),
    (["boot", "a", "--flavor-vcpus", "two"], "--flavor-vcpus: not an integer: 'two'"),
    (["boot", "a", "--flavor-vcpus", FAR], f"--flavor-vcpus: must be from 1 to {2**31 - 1}"),
    (["boot", "a", "--flavor-memory-mb", "0"], "argument --flavor-memory-mb"),
    (["boot", "a", "--flavor-disk-gb", "1e3"], "argument --flavor-disk-gb: not an integer"),
    (["boot", "a", "--flavor-vcpus", "1", "--project", ""], "argument --project: must not"),
    (["boot", "a", "--flavor-vcpus", "1", "--project", "p" * 300], "argument --project"),
    (["boot", "a", "--flavor-vcpus", "1", "--user", ""], "argument --user: must not be"),
    (["boot", "a", "--flavor-vcpus", "1", "--user", "u" * 300], "argument --user"),
    (["boot", "a", "--flavor-vcpus", "1", "--flavor-name", ""], "argument --flavor-name"),
    (["boot", "a", "--flavor-vcpus", "1", "--host", ""], "argument --host: must not"),
    (["boot", "a", "--resources", "VCPU=0"], "VCPU amount must be an integer from 1"),
    (["boot", "a", "--resources", f"VCPU={FAR}"], "VCPU amount must be an integer from 1"),
    (["boot", "a", "--resources", "GPU=1"], "invalid resource class 'GPU'"),
    (["boot", "a", "--resources", "VCPU=²"], "--resources wants CLASS=AMOUNT"),
    (["boot", "a", "--resources", "VCPU=-2"], "--resources wants CLASS=AMOUNT"),
    (["migrations", "list", "--status", "bogus"], "'bogus' is not a migration status"),
    (["confirm", "not-a-uuid"], "argument MIGRATION: not a UUID: 'not-a-uuid'"),
    (["revert", "../../etc"], "argument MIGRATION: not a UUID"),
    (["confirm", "6f1c2b9e-0000-4000-8000-000000000001"], "migration"),
    (["allocation-candidates", "list", "--resource", "VCPU=1", "--limit", "0"], "--limit"),
    (["usages", "--project", ""], "argument --project: must not be empty"),
    (["providers", "show", "../x"], "'../x'"),
    (["inventory", "show", "h1?x=1"], "'h1?x=1'"),
    (["allocations", "show", "nobody"], "'nobody'"),
    (["delete", "ghost"], "'ghost'"),
]


@pytest.mark.parametrize("args,names", BAD_ARGUMENTS,
                         ids=[" ".join(a)[:40] for a, _ in BAD_ARGUMENTS])
def test_bad_arguments_exit_2_name_the_argument_and_change_nothing(cloud, args, names):
    before = cloud.rows()
    code, out, err = cloud.rtf(*args)
    assert code == 2, (code, out, err)
    assert names in err, err
    assert err.strip(), err
    assert cloud.rows() == before


# ([group] option = value lines, what the message must name). exit 2.
BAD_CONFIG = [
    ("[DEFAULT]\ncpu_allocation_ratio = inf\n", "cpu_allocation_ratio"),
    ("[DEFAULT]\ncpu_allocation_ratio = nan\n", "cpu_allocation_ratio"),
    ("[DEFAULT]\nram_allocation_ratio = -1\n", "ram_allocation_ratio"),
    ("[DEFAULT]\ndisk_allocation_ratio = 1e39\n", "disk_allocation_ratio"),
    ("[DEFAULT]\ninitial_cpu_allocation_ratio = -inf\n", "initial_cpu_allocation_ratio"),
    ("[DEFAULT]\nreserved_host_cpus = -1\n", "reserved_host_cpus"),
    ("[DEFAULT]\nreserved_host_memory_mb = 100000000000000000000\n", "reserved_host_memory_mb"),
    ("[DEFAULT]\nreserved_host_disk_mb = lots\n", "reserved_host_disk_mb"),
    ("[DEFAULT]\nupdate_resources_interval = 0\n", "update_resources_interval"),
    ("[DEFAULT]\nhost = x" + "x" * 300 + "\n", "host"),
    ("[DEFAULT]\ncompute_driver = nosuch\n", "nosuch"),
    ("[placement]\nbackend = etcd\n", "etcd"),
    ("[placement]\nconflict_retries = -1\n", "conflict_retries"),
    ("[placement]\nmove_claim_strategy = both\n", "move_claim_strategy"),
    ("[fake_driver]\nvcpus = 0\n", "vcpus"),
    ("[fake_driver]\nmemory_mb = " + str(2**31) + "\n", "memory_mb"),
    ("[fake_driver]\nchild_resource_class = fpga\n", "child_resource_class"),
    ("[database]\npool_size = 0\n", "pool_size"),
]


# The engine under test does not change this case.
@pytest.mark.sqlite_only
@pytest.mark.parametrize("extra,names", BAD_CONFIG, ids=[n for _, n in BAD_CONFIG])
def test_bad_config_values_exit_2_name_option_and_file_and_change_nothing(cloud, extra, names):
    ini = cloud.write_ini(extra, name="bad.conf")
    before = cloud.rows()
    code, out, err = cloud.rtf("compute", "update", ini=ini)
    assert code == 2, (code, out, err)
    line = one_line(err)
    assert names in line
    if "Should" in line or "invalid value" in line:
        assert "bad.conf" in line
    assert cloud.rows() == before


# The engine under test does not change this case.
@pytest.mark.sqlite_only
@pytest.mark.parametrize("host", ["", "   "])
def test_an_empty_host_name_is_refused(cloud, host):
    ini = cloud.write_ini(base=BASE_INI.replace("host = h1", f"host = {host}"), name="h.conf")
    before = cloud.rows()
    code, _, err = cloud.rtf("compute", "update", ini=ini)
    assert code == 2
    assert "[DEFAULT] host" in one_line(err) and "empty" in err
    assert cloud.rows() == before


# The engine under test does not change this case.
@pytest.mark.sqlite_only
@pytest.mark.parametrize("extra,warning", [
    ("[DEFAULT]\nreserved_host_cpu = 4\n",
     "unknown option reserved_host_cpu in [DEFAULT] is ignored (did you mean "
     "reserved_host_cpus?)"),
    ("[fake_drvier]\nvcpus = 8\n",
     "unknown group [fake_drvier] is ignored"),
    ("[fake_driver]\nvcpu = 8\n", "unknown option vcpu in [fake_driver]"),
    ("[placement]\nbakend = http\n", "unknown option bakend in [placement]"),
])
def test_unknown_options_and_groups_are_warned_with_file_and_line(cloud, extra, warning):
    ini = cloud.write_ini(extra, name="typo.conf")
    line = len(BASE_INI.splitlines()) + 1 + (0 if extra.startswith("[DEFAULT]") else 0)
    before = cloud.rows()
    code, _, err = cloud.rtf("instances", "list", ini=ini)
    assert code == 0, err
    assert warning in err
    assert f"typo.conf:{line}" in err or f"typo.conf:{line + 1}" in err, err
    assert cloud.rows() == before


# Port 1 on the loopback: privileged, nothing listens there.
CLOSED = 1


# [database] connection values: (url, exit status, what the line names).
BAD_DATABASES = [
    ("notaurl", 2, "not a database URL"),
    ("postgresql+psycopg2://u@127.0.0.1:abc/x", 2, "is the port a number"),
    ("nosuchdb://x", 2, "unknown database dialect or driver"),
    ("mysql+nodriver://root@127.0.0.1/x", 2, "unknown database dialect or driver"),
    (f"postgresql+psycopg2://postgres@127.0.0.1:{CLOSED}/x", 1, "cannot use"),
    (f"mysql+pymysql://root@127.0.0.1:{CLOSED}/x", 1, "cannot use"),
    # A database that is not there is a configuration error, as a bad URL is.
    ("postgresql+psycopg2://postgres@127.0.0.1:5432/rtf_no_such_database", 2,
     "create the database, or correct the URL"),
    ("mysql+pymysql://root@127.0.0.1:3306/rtf_no_such_database", 2,
     "create the database, or correct the URL"),
    ("sqlite:////nonexistent-rtf-dir/compute.sqlite", 1, "cannot use"),
]


# The engine under test does not change this case.
@pytest.mark.sqlite_only
@pytest.mark.parametrize("url,status,names", BAD_DATABASES, ids=[u for u, _, _ in BAD_DATABASES])
def test_bad_database_connections_are_one_line_naming_the_option(cloud, url, status, names):
    ini = cloud.write_ini(f"[database]\nconnection = {url}\n", name="db.conf")
    before = cloud.rows()
    code, out, err = cloud.rtf("instances", "list", ini=ini)
    assert code == status, err
    line = one_line(err)
    assert "[database] connection" in line and names in line
    assert "db.conf" in line
    assert cloud.rows() == before


# The engine under test does not change this case.
@pytest.mark.sqlite_only
def test_a_read_only_sqlite_database_is_one_line(tmp_path, capsys):
    from tests.functional.bad_input.conftest import Cloud

    url = f"sqlite:///{tmp_path}/ro.sqlite"
    cloud = Cloud(tmp_path, url, capsys)
    assert cloud.rtf("compute", "update")[0] == 0
    ro = f"sqlite:///file:{tmp_path}/ro.sqlite?mode=ro&uri=true"
    ini = cloud.write_ini(base=BASE_INI.replace("{url}", ro)
                          + "[database]\nauto_sync = false\n"
                          "[placement_database]\nauto_sync = false\n", name="ro.conf")
    before = cloud.rows()
    code, _, err = cloud.rtf("boot", "web", "--flavor-vcpus", "1", ini=ini)
    assert code == 1
    assert one_line(err) == "database error: attempt to write a readonly database"
    assert cloud.rows() == before


# The engine under test does not change this case.
@pytest.mark.sqlite_only
def test_debug_shows_the_database_exception(cloud):
    ini = cloud.write_ini(f"[database]\nconnection = postgresql+psycopg2://postgres@127.0.0.1:"
                          f"{CLOSED}/x\n", name="dbg.conf")
    code, _, err = cloud.rtf("--debug", "instances", "list", ini=ini)
    assert code == 1
    assert "Traceback" in err and "OperationalError" in err
