"""The committed sample configuration matches the registered options."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "etc" / "rtframework" / "rtframework.conf.sample"
GENERATOR_CONF = ROOT / "etc" / "rtframework" / "rtframework-config-generator.conf"


def test_sample_config_is_current(tmp_path):
    generated = tmp_path / "rtframework.conf.sample"
    subprocess.run(
        [sys.executable, "-m", "oslo_config.generator", "--config-file", str(GENERATOR_CONF),
         "--output-file", str(generated)],
        check=True, cwd=ROOT, capture_output=True, text=True,
    )
    assert generated.read_text() == SAMPLE.read_text(), (
        "etc/rtframework/rtframework.conf.sample is stale: run 'tox -e genconfig'"
    )


def test_sample_config_documents_every_group():
    text = SAMPLE.read_text()
    for group in ("[DEFAULT]", "[database]", "[placement_database]", "[placement]",
                  "[fake_driver]", "[libvirt]", "[baremetal]", "[api]"):
        assert group in text, f"{group} missing from the sample configuration"
