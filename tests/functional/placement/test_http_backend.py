"""What is particular to the http backend: reaching Placement, its config
and Placement's own wording in the errors."""

from __future__ import annotations

import os
import socket
import textwrap
import uuid

import pytest

from rtframework import conf as rtconf
from rtframework.placement import backend as contract
from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.http import HTTPBackend
from tests.fixtures.placement_server import configure_http_backend

needs_placement = pytest.mark.skipif(
    os.environ.get("RTF_TEST_BACKEND", "sql") != "http",
    reason="needs a real Placement: RTF_TEST_BACKEND=http")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_nothing_listening_is_backend_unavailable(conf, config):
    configure_http_backend(conf, config, f"http://127.0.0.1:{closed_port()}")
    config.config(group="placement", connect_retries=0)
    backend = HTTPBackend(conf)
    with pytest.raises(errors.BackendUnavailable, match="GET /resource_providers"):
        backend.list_providers()


@needs_placement
@pytest.mark.placement
def test_the_readme_ini_points_a_host_at_a_test_placement(tmp_path, placement_server):
    ini = tmp_path / "rtframework.conf"
    ini.write_text(textwrap.dedent(f"""\
        [placement]
        backend = http
        auth_type = admin_token
        endpoint = {placement_server.url}
        token = admin
        """))
    conf = rtconf.load([str(ini)])
    backend = contract.load_backend(conf)
    assert isinstance(backend, HTTPBackend)
    rp = backend.create_provider(f"readme-{uuid.uuid4()}")
    assert backend.get_provider(rp.uuid) == rp
    backend.close()


@needs_placement
@pytest.mark.placement
def test_errors_keep_placements_detail(http_backend):
    rp = http_backend.create_provider(f"detail-{uuid.uuid4()}")
    http_backend.set_inventories(rp.uuid, 0, {"VCPU": t.Inventory(total=2)})
    with pytest.raises(errors.CapacityExceeded) as exc:
        http_backend.put_allocations(str(uuid.uuid4()), {rp.uuid: {"VCPU": 3}},
                                     project_id="p", user_id="u", consumer_generation=None)
    assert "POST /allocations" in str(exc.value)
    assert f"'VCPU' on resource provider '{rp.uuid}'" in str(exc.value)
    assert "exceed the capacity" in str(exc.value)


def test_the_sample_config_builds_a_keystone_backend():
    sample = os.path.join(os.path.dirname(__file__), "..", "..", "..", "etc", "rtframework",
                          "placement-http.conf")
    conf = rtconf.load([sample])
    backend = contract.load_backend(conf)
    assert isinstance(backend, HTTPBackend)
    assert backend.adapter.service_type == "placement"
    assert backend.adapter.interface == ["internal", "public"]
    assert type(backend.adapter.auth).__name__ == "Password"
