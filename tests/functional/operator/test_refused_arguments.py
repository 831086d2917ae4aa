"""Arguments that made no sense used to run anyway (or die with an
IndexError); each is now refused naming the argument, nothing done."""

from __future__ import annotations

import pytest

from tests.functional.operator.conftest import as_json


@pytest.mark.parametrize("args,says", [
    (("--hosts", "0"), "--hosts must be at least 1, got 0"),
    (("--operations", "-5"), "--operations must be at least 1, got -5"),
    (("--kill-rate", "1.5"), "--kill-rate must be from 0 to 1, got 1.5"),
    (("--db-fault-rate", "-0.1"), "--db-fault-rate must be from 0 to 1"),
    (("--check-interval", "-1"), "--check-interval must be at least 0"),
])
def test_simulate_refuses_numbers_a_soak_cannot_run_with(rtf, tmp_path, args, says):
    code, out, err = rtf("simulate", *args, "--no-progress", "--plot", str(tmp_path / "p.png"))
    assert (code, out) == (2, "")
    assert says in err and "Traceback" not in err
    assert not (tmp_path / "p.png").exists()


@pytest.mark.parametrize("args,says", [
    (("--resources", "VCPU=1,VCPU=2"), "--resources names VCPU twice (VCPU=1 and VCPU=2)"),
    (("--resources", "vcpu=1,VCPU=1"), "--resources names VCPU twice"),
    (("--resources", "VCPU=1", "--flavor-vcpus", "2"),
     "--flavor-vcpus 2 and --resources VCPU=1 both give VCPU"),
])
def test_boot_refuses_a_class_given_twice(rtf, args, says):
    assert rtf("compute", "update")[0] == 0
    code, _, err = rtf("boot", "web", *args)
    assert code == 2 and says in err, err
    assert as_json(rtf, "instances", "list", "--all") == []


def test_resize_refuses_a_class_given_twice(rtf):
    assert rtf("compute", "update")[0] == 0
    as_json(rtf, "boot", "web", "--flavor-vcpus", "1")
    code, _, err = rtf("resize", "web", "--flavor", "VCPU=2,MEMORY_MB=64,VCPU=4")
    assert code == 2 and "--flavor names VCPU twice" in err, err
    assert as_json(rtf, "migrations", "list") == []
