"""Bad calls of the placement backend API (sql, on the test's engine) and
answers of a remote Placement that are not Placement answers: a typed
error whose message names the field or value, and nothing changed."""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rtframework.placement import errors
from rtframework.placement import types as t
from rtframework.placement.http import HTTPBackend
from tests.fixtures.placement_server import configure_http_backend

GOOD = "3c9b6a1e-6d5e-4b8f-9a51-0c1f6f0a7e21"


def _write(rp, **kwargs):
    fields = {"consumer_uuid": "0b9f3b5e-5c8e-4c1b-8a9e-2c6d7f8e9a10",
              "allocations": {rp: {"VCPU": 1}}, "project_id": "p", "user_id": "u",
              "consumer_generation": None}
    fields.update(kwargs)
    return t.AllocationWrite(**fields)


# (call on (backend, provider uuid, provider generation), error type, what is named)
BAD_CALLS = [
    ("consumer id not a uuid", lambda b, rp, g: b.write_allocations(
        [_write(rp, consumer_uuid="instance-1")]), errors.InvalidRequest, "'instance-1'"),
    ("51-character consumer id", lambda b, rp, g: b.write_allocations(
        [_write(rp, consumer_uuid="c" * 51)]), errors.InvalidRequest, "consumer uuid"),
    ("empty project id", lambda b, rp, g: b.write_allocations(
        [_write(rp, project_id="")]), errors.InvalidRequest, "project id"),
    ("300-character project id", lambda b, rp, g: b.write_allocations(
        [_write(rp, project_id="p" * 300)]), errors.InvalidRequest, "project id"),
    ("empty user id", lambda b, rp, g: b.write_allocations(
        [_write(rp, user_id="")]), errors.InvalidRequest, "user id"),
    ("lower-case consumer type", lambda b, rp, g: b.write_allocations(
        [_write(rp, consumer_type="instance")]), errors.InvalidRequest, "consumer type"),
    ("provider uuid with a path", lambda b, rp, g: b.write_allocations(
        [_write("../" + rp)]), errors.InvalidRequest, "provider uuid"),
    ("amount zero", lambda b, rp, g: b.write_allocations(
        [_write(rp, allocations={rp: {"VCPU": 0}})]), errors.InvalidAllocation, "VCPU"),
    ("amount 2**31", lambda b, rp, g: b.write_allocations(
        [_write(rp, allocations={rp: {"VCPU": 2**31}})]), errors.InvalidAllocation, "VCPU"),
    ("float amount", lambda b, rp, g: b.write_allocations(
        [_write(rp, allocations={rp: {"VCPU": 1.5}})]), errors.InvalidAllocation, "1.5"),
    ("unknown class name", lambda b, rp, g: b.write_allocations(
        [_write(rp, allocations={rp: {"vcpu": 1}})]), errors.InvalidResourceClass, "'vcpu'"),
    ("inf ratio", lambda b, rp, g: b.set_inventories(
        rp, g, {"VCPU": t.Inventory(total=8, allocation_ratio=math.inf)}),
        errors.InvalidInventory, "allocation_ratio inf"),
    ("nan ratio", lambda b, rp, g: b.set_inventories(
        rp, g, {"VCPU": t.Inventory(total=8, allocation_ratio=math.nan)}),
        errors.InvalidInventory, "allocation_ratio nan"),
    ("10**20 reserved", lambda b, rp, g: b.set_inventories(
        rp, g, {"VCPU": t.Inventory(total=8, reserved=10**20)}),
        errors.InvalidInventory, "reserved"),
    ("string generation", lambda b, rp, g: b.set_inventories(
        rp, "0", {"VCPU": t.Inventory(total=8)}), errors.InvalidRequest, "generation"),
    ("empty provider name", lambda b, rp, g: b.create_provider(""),
     errors.InvalidRequest, "provider name"),
    ("201-character provider name", lambda b, rp, g: b.create_provider("n" * 201),
     errors.InvalidRequest, "provider name"),
    ("provider uuid with a query", lambda b, rp, g: b.get_provider(rp + "?x=1"),
     errors.InvalidRequest, "provider uuid"),
    ("aggregate not a uuid", lambda b, rp, g: b.set_provider_aggregates(
        rp, g, frozenset({"rack1"})), errors.InvalidRequest, "'rack1'"),
    ("invalid trait name", lambda b, rp, g: b.set_provider_traits(
        rp, g, frozenset({"fast"})), errors.InvalidTrait, "'fast'"),
    ("candidates with amount 0", lambda b, rp, g: b.get_allocation_candidates(
        t.CandidateQuery(resources={"VCPU": 0})), errors.InvalidRequest, "VCPU"),
    ("candidates in a malformed tree", lambda b, rp, g: b.get_allocation_candidates(
        t.CandidateQuery(resources={"VCPU": 1}, in_tree="tree")), errors.InvalidRequest,
        "'tree'"),
    ("usages of an empty project", lambda b, rp, g: b.get_project_usages(""),
     errors.InvalidRequest, "project id"),
]


@pytest.fixture
def provider(sql_backend):
    rp = sql_backend.create_provider("bad-input-rp", uuid=GOOD)
    gen = sql_backend.set_inventories(rp.uuid, 0, {"VCPU": t.Inventory(total=8)})
    sql_backend.put_allocations("7d2c1c8e-1111-4a2b-9c3d-4e5f6a7b8c9d", {rp.uuid: {"VCPU": 2}},
                                project_id="p", user_id="u", consumer_generation=None)
    return rp.uuid, sql_backend.get_provider(rp.uuid).generation or gen


def _state(backend):
    return [(p, backend.get_inventories(p.uuid), backend.get_provider_allocations(p.uuid),
             backend.get_provider_traits(p.uuid), backend.get_provider_aggregates(p.uuid))
            for p in backend.list_providers()]


@pytest.mark.parametrize("what,call,error,names", BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_backend_calls_are_typed_errors_and_change_nothing(sql_backend, provider, what,
                                                               call, error, names):
    rp, generation = provider
    before = _state(sql_backend)
    with pytest.raises(error) as exc:
        call(sql_backend, rp, generation)
    message = str(exc.value)
    assert names in message and "\n" not in message
    assert _state(sql_backend) == before


# -- a remote Placement that answers something else ----------------------------
class _Answers(BaseHTTPRequestHandler):
    status = 200
    ctype = "application/json"
    body = b"{}"
    seen: list[str] = []

    def _answer(self):
        type(self).seen.append(f"{self.command} {self.path}")
        self.send_response(self.status)
        self.send_header("Content-Type", self.ctype)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    do_GET = do_PUT = do_POST = do_DELETE = _answer

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_placement():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


HTML = (b"<html><head><title>502 Bad Gateway</title></head><body>" + b"x" * 5000
        + b"</body></html>")

# (status, content type, body, call, what the one line must name)
BAD_ANSWERS = [
    (200, "text/html", HTML, lambda b: b.list_providers(), "an HTML page"),
    (502, "text/html", HTML, lambda b: b.list_providers(), "'502 Bad Gateway'"),
    (500, "text/html", HTML, lambda b: b.get_provider(GOOD), "HTTP 500"),
    (200, "text/plain", b"hello", lambda b: b.list_providers(), "'hello'"),
    (200, "application/json", b"[]", lambda b: b.list_providers(), "JSON list"),
    (200, "application/json", b"{}", lambda b: b.list_providers(),
     "without resource_providers"),
    (200, "application/json", json.dumps({"resource_providers": [{"uuid": GOOD}]}).encode(),
     lambda b: b.list_providers(), "another shape"),
    (200, "application/json", json.dumps({"resource_provider_generation": "x",
                                          "inventories": {}}).encode(),
     lambda b: b.get_inventories(GOOD), "expected an integer"),
    (200, "application/json", b"", lambda b: b.get_provider_usages(GOOD), "an empty body"),
    (200, "application/json", b"{not json", lambda b: b.list_traits(), "traits"),
]


@pytest.mark.sqlite_only
@pytest.mark.parametrize("status,ctype,body,call,names", BAD_ANSWERS,
                         ids=[f"{a[0]}-{a[1]}-{a[4]}" for a in BAD_ANSWERS])
def test_answers_that_are_not_placement_are_one_line(conf, config, fake_placement, status,
                                                     ctype, body, call, names):
    _Answers.status, _Answers.ctype, _Answers.body = status, ctype, body
    configure_http_backend(conf, config, fake_placement)
    config.config(group="placement", status_code_retries=0, connect_retries=0)
    backend = HTTPBackend(conf)
    try:
        with pytest.raises(errors.PlacementError) as exc:
            call(backend)
    finally:
        backend.close()
    message = str(exc.value)
    assert "\n" not in message and len(message) < 400, message
    assert names in message, message
    assert fake_placement in message or status >= 500, message
    assert "<body" not in message


@pytest.mark.sqlite_only
def test_a_malformed_provider_never_reaches_the_request_path(conf, config, fake_placement):
    _Answers.seen = []
    configure_http_backend(conf, config, fake_placement)
    backend = HTTPBackend(conf)
    for bad in ("../../traits", "x?y=1", "%2e%2e"):
        with pytest.raises(errors.InvalidRequest, match="provider uuid"):
            backend.get_inventories(bad)
    backend.close()
    assert _Answers.seen == []


@pytest.mark.sqlite_only
def test_the_cli_says_in_one_line_what_a_remote_answered(tmp_path, fake_placement, capsys):
    from tests.functional.bad_input.conftest import Cloud, one_line

    _Answers.status, _Answers.ctype, _Answers.body = 503, "text/html", HTML
    cloud = Cloud(tmp_path, f"sqlite:///{tmp_path}/c.sqlite", capsys)
    ini = cloud.write_ini(
        f"[placement]\nbackend = http\nauth_type = admin_token\nendpoint = {fake_placement}\n"
        "token = admin\nstatus_code_retries = 0\n", name="http.conf")
    code, _, err = cloud.rtf("providers", "list", ini=ini)
    assert code == 1
    line = one_line(err)
    assert "HTTP 503" in line and fake_placement in line and "'502 Bad Gateway'" in line
