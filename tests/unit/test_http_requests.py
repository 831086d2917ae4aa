"""What the http backend sends Placement for each contract call (method,
path, query, body, microversion header) and how it reads the documented
answer. A local server records the requests and answers with bodies of
the shape the Placement API reference gives; ``tox -e
functional-placement`` runs the same calls against a real Placement."""

from __future__ import annotations

import gc
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rtframework.placement import errors, http
from rtframework.placement import types as t
from rtframework.placement.http import HTTPBackend
from tests.fixtures.placement_server import configure_http_backend

RP = "4e8e5957-649f-477b-9e5b-f1f75b21c03c"
CHILD = "0e7e5957-649f-477b-9e5b-f1f75b21c03c"
AGG = "a1111111-649f-477b-9e5b-f1f75b21c03c"
CONSUMER = "c2222222-649f-477b-9e5b-f1f75b21c03c"


class _Recorder(BaseHTTPRequestHandler):
    answers: dict[tuple[str, str], object] = {}
    seen: list[tuple[str, str, list[tuple[str, str]], object, str]] = []

    def _answer(self):
        url = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        type(self).seen.append((self.command, url.path, urllib.parse.parse_qsl(url.query), body,
                                self.headers.get("OpenStack-API-Version")))
        answer = type(self).answers.get((self.command, url.path))
        data = b"" if answer is None else json.dumps(answer).encode()
        self.send_response(200 if data else 204)
        if data:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_DELETE = _answer

    def log_message(self, *args):
        pass


@pytest.fixture
def placement(conf, config):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Recorder.answers, _Recorder.seen = {}, []
    configure_http_backend(conf, config, f"http://127.0.0.1:{server.server_address[1]}")
    backend = HTTPBackend(conf)
    yield backend
    backend.close()
    server.shutdown()
    server.server_close()


def _sent():
    """(method, path, query, body) of each request; every one names 1.39."""
    assert {s[4] for s in _Recorder.seen} == {"placement 1.39"}
    return [s[:4] for s in _Recorder.seen]


def _provider(uuid, name, generation=1, parent=None, root=None):
    return {"uuid": uuid, "name": name, "generation": generation,
            "parent_provider_uuid": parent, "root_provider_uuid": root or uuid}


def test_provider_filters_are_query_parameters(placement):
    _Recorder.answers[("GET", "/resource_providers")] = {"resource_providers": [
        _provider(RP, "n1"), _provider(CHILD, "n1_gpu", 3, RP, RP)]}
    found = placement.list_providers(t.ProviderQuery(
        uuid=RP.upper(), name="n1", in_tree=RP, member_of=(frozenset({AGG}),),
        required_traits=frozenset({"HW_CPU_X86_AVX2", "CUSTOM_A"}),
        forbidden_traits=frozenset({"CUSTOM_B"}), resources={"VCPU": 2, "DISK_GB": 10}))
    assert _sent() == [("GET", "/resource_providers", [
        ("resources", "DISK_GB:10,VCPU:2"), ("required", "CUSTOM_A,HW_CPU_X86_AVX2,!CUSTOM_B"),
        ("member_of", f"in:{AGG}"), ("in_tree", RP), ("uuid", RP), ("name", "n1")], None)]
    assert found == [t.ResourceProvider(uuid=RP, name="n1", generation=1, root_uuid=RP),
                     t.ResourceProvider(uuid=CHILD, name="n1_gpu", generation=3, parent_uuid=RP,
                                        root_uuid=RP)]


def test_provider_writes(placement):
    _Recorder.answers[("POST", "/resource_providers")] = _provider(CHILD, "gpu", 0, RP, RP)
    _Recorder.answers[("PUT", f"/resource_providers/{CHILD}")] = _provider(CHILD, "gpu2", 1, RP)
    created = placement.create_provider("gpu", uuid=CHILD.upper(), parent_uuid=RP)
    renamed = placement.update_provider(CHILD, name="gpu2", parent_uuid=RP)
    placement.delete_provider(CHILD)
    assert _sent() == [
        ("POST", "/resource_providers", [],
         {"name": "gpu", "uuid": CHILD, "parent_provider_uuid": RP}),
        ("PUT", f"/resource_providers/{CHILD}", [], {"name": "gpu2", "parent_provider_uuid": RP}),
        ("DELETE", f"/resource_providers/{CHILD}", [], None)]
    assert (created.parent_uuid, renamed.name, renamed.generation) == (RP, "gpu2", 1)


INVENTORIES = {"resource_provider_generation": 5, "inventories": {
    "VCPU": {"total": 8, "reserved": 0, "min_unit": 1, "max_unit": 8, "step_size": 1,
             "allocation_ratio": 4.0},
    "DISK_GB": {"total": 100, "reserved": 10, "min_unit": 1, "max_unit": 100, "step_size": 1,
                "allocation_ratio": 1.0}}}


def test_one_inventory_class_is_changed_or_removed_by_a_whole_put_at_the_callers_generation(
        placement):
    path = f"/resource_providers/{RP}/inventories"
    _Recorder.answers[("GET", path)] = INVENTORIES
    _Recorder.answers[("PUT", path)] = {"resource_provider_generation": 6}
    assert placement.get_inventories(RP).inventories["VCPU"] == t.Inventory(
        total=8, max_unit=8, allocation_ratio=4.0)
    assert placement.delete_inventory(RP, 5, "DISK_GB") == 6
    assert placement.set_inventory(RP, 5, "VCPU", t.Inventory(total=16, max_unit=16)) == 6
    sent = _sent()
    assert [(m, p) for m, p, _, _ in sent] == [("GET", path)] * 2 + [("PUT", path)] + [
        ("GET", path), ("PUT", path)]
    assert sent[2][3] == {"resource_provider_generation": 5,
                          "inventories": {"VCPU": INVENTORIES["inventories"]["VCPU"]}}
    assert sent[4][3]["inventories"]["VCPU"]["total"] == 16
    assert set(sent[4][3]["inventories"]) == {"VCPU", "DISK_GB"}
    with pytest.raises(errors.NotFound, match=f"provider {RP} has no inventory of PCPU"):
        placement.delete_inventory(RP, 5, "PCPU")
    assert [m for m, _, _, _ in _sent()[5:]] == ["GET"]  # nothing written


def test_traits_aggregates_and_classes(placement):
    base = f"/resource_providers/{RP}"
    _Recorder.answers[("GET", f"{base}/traits")] = {"resource_provider_generation": 2,
                                                    "traits": ["CUSTOM_A"]}
    _Recorder.answers[("PUT", f"{base}/aggregates")] = {"resource_provider_generation": 3}
    _Recorder.answers[("GET", "/traits")] = {"traits": ["CUSTOM_B", "CUSTOM_A"]}
    _Recorder.answers[("GET", "/resource_classes")] = {"resource_classes": [
        {"name": "VCPU"}, {"name": "CUSTOM_GPU"}]}
    assert placement.get_provider_traits(RP) == t.ProviderTraits(2, frozenset({"CUSTOM_A"}))
    assert placement.set_provider_aggregates(RP, 2, frozenset({AGG.upper()})) == 3
    assert placement.list_traits("CUSTOM_") == ["CUSTOM_A", "CUSTOM_B"]
    assert placement.list_resource_classes() == ["CUSTOM_GPU", "VCPU"]
    placement.ensure_trait("CUSTOM_C")
    placement.ensure_trait("HW_CPU_X86_AVX2")  # standard: nothing sent
    placement.ensure_resource_class("CUSTOM_GPU")
    placement.ensure_resource_class("VCPU")
    placement.delete_resource_class("CUSTOM_GPU")
    assert _sent() == [
        ("GET", f"{base}/traits", [], None),
        ("PUT", f"{base}/aggregates", [], {"resource_provider_generation": 2,
                                           "aggregates": [AGG]}),
        ("GET", "/traits", [("name", "startswith:CUSTOM_")], None),
        ("GET", "/resource_classes", [], None),
        ("PUT", "/traits/CUSTOM_C", [], None),
        ("PUT", "/resource_classes/CUSTOM_GPU", [], None),
        ("DELETE", "/resource_classes/CUSTOM_GPU", [], None)]


def test_allocation_writes_are_one_post_and_deletes_keep_the_generation(placement):
    held = {"allocations": {RP: {"resources": {"VCPU": 2}}}, "consumer_generation": 4,
            "project_id": "p", "user_id": "u", "consumer_type": "INSTANCE"}
    _Recorder.answers[("GET", f"/allocations/{CONSUMER}")] = held
    placement.write_allocations([t.AllocationWrite(
        consumer_uuid=CONSUMER.upper(), allocations={RP: {"VCPU": 2}}, project_id="p",
        user_id="u", consumer_generation=None, consumer_type="MIGRATION")])
    assert placement.get_consumer_allocations(CONSUMER) == t.ConsumerAllocations(
        consumer_uuid=CONSUMER, allocations={RP: {"VCPU": 2}}, generation=4, project_id="p",
        user_id="u", consumer_type="INSTANCE")
    placement.delete_allocations(CONSUMER)
    assert _sent() == [
        ("POST", "/allocations", [], {CONSUMER: {
            "allocations": {RP: {"resources": {"VCPU": 2}}}, "project_id": "p",
            "user_id": "u", "consumer_generation": None, "consumer_type": "MIGRATION"}}),
        ("GET", f"/allocations/{CONSUMER}", [], None),
        ("GET", f"/allocations/{CONSUMER}", [], None),
        ("POST", "/allocations", [], {CONSUMER: {
            "allocations": {}, "project_id": "p", "user_id": "u", "consumer_generation": 4,
            "consumer_type": "INSTANCE"}})]


def test_an_empty_write_for_a_consumer_placement_does_not_know_is_not_sent(placement):
    _Recorder.answers[("GET", f"/allocations/{CONSUMER}")] = {"allocations": {}}
    placement.write_allocations([t.AllocationWrite(
        consumer_uuid=CONSUMER, allocations={}, project_id="p", user_id="u",
        consumer_generation=None)])
    placement.delete_allocations(CONSUMER)
    assert [m for m, _, _, _ in _sent()] == ["GET", "GET"]


def test_usages(placement):
    _Recorder.answers[("GET", f"/resource_providers/{RP}/usages")] = {
        "resource_provider_generation": 1, "usages": {"VCPU": 2, "DISK_GB": 0}}
    _Recorder.answers[("GET", f"/resource_providers/{RP}/allocations")] = {
        "resource_provider_generation": 1,
        "allocations": {CONSUMER: {"resources": {"VCPU": 2}}}}
    _Recorder.answers[("GET", "/usages")] = {"usages": {
        "all": {"consumer_count": 3, "VCPU": 6}, "INSTANCE": {"consumer_count": 3, "VCPU": 6}}}
    assert placement.get_provider_usages(RP) == {"DISK_GB": 0, "VCPU": 2}
    assert placement.get_provider_allocations(RP) == {CONSUMER: {"VCPU": 2}}
    assert placement.get_project_usages("p", "u") == {"VCPU": 6}
    assert _sent()[2] == ("GET", "/usages", [("project_id", "p"), ("consumer_type", "all"),
                                             ("user_id", "u")], None)


def test_a_granular_candidate_request_and_its_answer(placement):
    _Recorder.answers[("GET", "/allocation_candidates")] = {
        "allocation_requests": [{
            "allocations": {RP: {"resources": {"VCPU": 1}},
                            CHILD: {"resources": {"VGPU": 1}}},
            "mappings": {"": [RP], "1": [CHILD]}}],
        "provider_summaries": {
            RP: {"resources": {"VCPU": {"capacity": 32, "used": 4}}, "traits": ["CUSTOM_A"],
                 "parent_provider_uuid": None, "root_provider_uuid": RP},
            CHILD: {"resources": {"VGPU": {"capacity": 2, "used": 0}}, "traits": [],
                    "parent_provider_uuid": RP, "root_provider_uuid": RP}}}
    found = placement.get_allocation_candidates(t.CandidateQuery(
        resources={"VCPU": 1}, required_traits=frozenset({"CUSTOM_A"}),
        groups={"1": t.RequestGroup(resources={"VGPU": 1}, in_tree=RP,
                                    forbidden_traits=frozenset({"CUSTOM_SLOW"})),
                "2": t.RequestGroup(required_traits=frozenset({"CUSTOM_NIC"}))},
        group_policy="none", root_forbidden=frozenset({"CUSTOM_RESERVED"}),
        same_subtree=(frozenset({"1", "2"}),), limit=5))
    assert _sent() == [("GET", "/allocation_candidates", [
        ("resources", "VCPU:1"), ("required", "CUSTOM_A"),
        ("resources1", "VGPU:1"), ("required1", "!CUSTOM_SLOW"), ("in_tree1", RP),
        ("required2", "CUSTOM_NIC"), ("group_policy", "none"),
        ("root_required", "!CUSTOM_RESERVED"), ("same_subtree", "1,2"), ("limit", "5")], None)]
    (request,) = found.allocation_requests
    assert request.allocations == {RP: {"VCPU": 1}, CHILD: {"VGPU": 1}}
    assert request.mappings == {"": (RP,), "1": (CHILD,)}
    assert found.provider_summaries[CHILD] == t.ProviderSummary(
        uuid=CHILD, root_uuid=RP, parent_uuid=RP,
        resources={"VGPU": t.ResourceSummary(capacity=2, used=0)}, traits=frozenset())


def test_a_candidate_answer_is_decoded_without_automatic_collection(placement, monkeypatch,
                                                                    collection_on):
    """Paused while the answer is decoded and parsed; not while Placement
    (here a server thread of this process) is asked and answers."""
    _Recorder.answers[("GET", "/allocation_candidates")] = {
        "allocation_requests": [{"allocations": {RP: {"resources": {"VCPU": 1}}},
                                 "mappings": {"": [RP]}}],
        "provider_summaries": {
            RP: {"resources": {"VCPU": {"capacity": 32, "used": 4}}, "traits": [],
                 "parent_provider_uuid": None, "root_provider_uuid": RP}}}
    seen = []

    def recording(where, call):
        def wrapped(*args):
            seen.append((where, gc.isenabled()))
            return call(*args)
        return wrapped

    monkeypatch.setattr(_Recorder, "do_GET", recording("answering", _Recorder.do_GET))
    monkeypatch.setattr(http, "json_body", recording("decoding", http.json_body))
    monkeypatch.setattr(http, "_candidates", recording("parsing", http._candidates))
    found = placement.get_allocation_candidates(t.CandidateQuery(resources={"VCPU": 1}))
    assert (seen, gc.isenabled()) == (
        [("answering", True), ("decoding", False), ("parsing", False)], True)
    seen.clear()
    gc.disable()
    placement.get_allocation_candidates(t.CandidateQuery(resources={"VCPU": 1}))
    assert (seen, gc.isenabled()) == (
        [("answering", False), ("decoding", False), ("parsing", False)], False)
    assert [r.allocations for r in found.allocation_requests] == [{RP: {"VCPU": 1}}]
