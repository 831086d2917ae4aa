"""The REST API as a client sees it: version header, errors, auth, policy,
and writes that reach the backend."""

from __future__ import annotations

import json

import pytest
import webob

from rtframework.api import app as api_app
from rtframework.placement.backend import load_backend


@pytest.fixture
def backend(conf, config, database_url):
    config.config(connection=database_url, group="placement_database")
    be = load_backend(conf)
    yield be
    be.close()


@pytest.fixture
def api(conf, config, backend):
    config.config(auth_strategy="noauth2", group="api")
    application = api_app.make_app(conf, backend)

    def call(method: str, path: str, body=None, *, token: str | None = "admin",
             version: str | None = None, **headers) -> webob.Response:
        hdrs = {"accept": "application/json", **headers}
        if token is not None:
            hdrs["x-auth-token"] = token
        if version is not None:
            hdrs["openstack-api-version"] = f"placement {version}"
        req = webob.Request.blank(path, method=method, headers=hdrs)
        if body is not None:
            req.body = json.dumps(body).encode()
            req.content_type = "application/json"
        return req.get_response(application)
    return call


def test_root_names_the_versions_and_needs_no_token(api):
    resp = api("GET", "/", token=None, version="latest")
    assert resp.status_int == 200
    assert resp.json["versions"][0]["max_version"] == "1.39"
    assert resp.headers["openstack-api-version"] == "placement 1.39"
    assert "openstack-api-version" in resp.headers["vary"]
    assert resp.headers["x-openstack-request-id"].startswith("req-")


@pytest.mark.parametrize("version,status,says", [
    ("0.5", 406, "Unacceptable version header: 0.5"),
    ("1.40", 406, "Unacceptable version header: 1.40"),
    ("pony.horse", 400, "invalid version string: pony.horse"),
])
def test_a_version_not_served_is_refused(api, version, status, says):
    resp = api("GET", "/", version=version)
    assert resp.status_int == status
    assert says in resp.json["errors"][0]["detail"]


def test_a_method_a_path_does_not_take_is_405_naming_the_allowed_ones(api):
    resp = api("DELETE", "/resource_providers")
    assert resp.status_int == 405
    assert resp.headers["allow"] == "GET, POST"


def test_no_token_is_401_and_a_non_admin_403(api):
    assert api("GET", "/resource_providers", token=None).status_int == 401
    resp = api("GET", "/resource_providers", token="someone:project")
    assert resp.status_int == 403
    assert "placement:resource_providers:list" in resp.json["errors"][0]["detail"]


def test_a_provider_written_through_the_api_is_in_the_backend(api, backend):
    created = api("POST", "/resource_providers", {"name": "cn1"}, version="1.20")
    assert created.status_int == 200
    uuid = created.json["uuid"]
    resp = api("PUT", f"/resource_providers/{uuid}/inventories",
               {"resource_provider_generation": 0,
                "inventories": {"VCPU": {"total": 8}}}, version="1.39")
    assert resp.status_int == 200, resp.body
    assert backend.get_inventories(uuid).inventories["VCPU"].total == 8
    assert backend.get_provider(uuid).generation == 1


def test_a_stale_generation_is_409_with_placement_s_code(api):
    uuid = api("POST", "/resource_providers", {"name": "cn1"}, version="1.20").json["uuid"]
    resp = api("PUT", f"/resource_providers/{uuid}/traits",
               {"resource_provider_generation": 5, "traits": []}, version="1.23")
    assert resp.status_int == 409
    error = resp.json["errors"][0]
    assert error["code"] == "placement.concurrent_update"
    assert error["request_id"] == resp.headers["x-openstack-request-id"]


def test_aggregates_before_1_19_keep_the_generation_after_bump_it(api, backend):
    uuid = api("POST", "/resource_providers", {"name": "cn1"}, version="1.20").json["uuid"]
    agg = "0e5a8b47-1b0c-4e0c-8b3e-4f1c8b2a9d10"
    assert api("PUT", f"/resource_providers/{uuid}/aggregates", [agg],
               version="1.18").status_int == 200
    assert backend.get_provider(uuid).generation == 0
    resp = api("PUT", f"/resource_providers/{uuid}/aggregates",
               {"aggregates": [], "resource_provider_generation": 0}, version="1.19")
    assert resp.json["resource_provider_generation"] == 1


def test_a_custom_trait_in_use_cannot_be_deleted(api, backend):
    uuid = api("POST", "/resource_providers", {"name": "cn1"}, version="1.20").json["uuid"]
    assert api("PUT", "/traits/CUSTOM_GOLD", version="1.6").status_int == 201
    api("PUT", f"/resource_providers/{uuid}/traits",
        {"resource_provider_generation": 0, "traits": ["CUSTOM_GOLD"]}, version="1.6")
    assert api("GET", "/traits?associated=true", version="1.6").json["traits"] == [
        "CUSTOM_GOLD"]
    assert api("DELETE", "/traits/CUSTOM_GOLD", version="1.6").status_int == 409
    api("DELETE", f"/resource_providers/{uuid}/traits", version="1.6")
    assert api("DELETE", "/traits/CUSTOM_GOLD", version="1.6").status_int == 204
    assert "CUSTOM_GOLD" not in backend.list_traits()


def test_a_reshape_that_fails_changes_nothing(api, backend):
    uuid = api("POST", "/resource_providers", {"name": "cn1"}, version="1.20").json["uuid"]
    api("PUT", f"/resource_providers/{uuid}/inventories",
        {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}},
        version="1.30")
    child = api("POST", "/resource_providers",
                {"name": "numa0", "parent_provider_uuid": uuid}, version="1.20").json["uuid"]
    consumer = "5b1e3c1e-9a52-4bb0-9c6c-0d1a2b3c4d5e"
    body = {"inventories": {child: {"resource_provider_generation": 0,
                                    "inventories": {"VCPU": {"total": 2}}}},
            "allocations": {consumer: {
                "allocations": {child: {"resources": {"VCPU": 4}}},
                "project_id": "p", "user_id": "u", "consumer_generation": None}}}
    service = {"x-roles": "service"}  # /reshaper is for services
    resp = api("POST", "/reshaper", body, version="1.30", **service)
    assert resp.status_int == 409, resp.body
    assert backend.get_inventories(child).inventories == {}
    assert backend.get_provider(child).generation == 0
    body["inventories"][child]["inventories"]["VCPU"]["total"] = 4
    assert api("POST", "/reshaper", body, version="1.30", **service).status_int == 204
    assert backend.get_provider_usages(child) == {"VCPU": 4}


def test_renaming_a_class_before_1_7_moves_its_inventory(api, backend):
    uuid = api("POST", "/resource_providers", {"name": "cn1"}, version="1.20").json["uuid"]
    assert api("POST", "/resource_classes", {"name": "CUSTOM_OLD"}, version="1.2"
               ).status_int == 201
    api("PUT", f"/resource_providers/{uuid}/inventories",
        {"resource_provider_generation": 0, "inventories": {"CUSTOM_OLD": {"total": 4}}},
        version="1.2")
    resp = api("PUT", "/resource_classes/CUSTOM_OLD", {"name": "CUSTOM_NEW"}, version="1.6")
    assert resp.status_int == 200, resp.body
    assert set(backend.get_inventories(uuid).inventories) == {"CUSTOM_NEW"}
    assert "CUSTOM_OLD" not in backend.list_resource_classes()


def test_a_consumer_written_before_1_38_has_no_type(api, backend):
    uuid = api("POST", "/resource_providers", {"name": "cn1"}, version="1.20").json["uuid"]
    api("PUT", f"/resource_providers/{uuid}/inventories",
        {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}},
        version="1.20")
    consumer = "8f0a4bd6-0c1e-4a40-a6a4-2f1f61b1b0a3"
    resp = api("PUT", f"/allocations/{consumer}",
               {"allocations": {uuid: {"resources": {"VCPU": 1}}}, "project_id": "p",
                "user_id": "u", "consumer_generation": None}, version="1.28")
    assert resp.status_int == 204, resp.body
    assert api("GET", f"/allocations/{consumer}", version="1.38").json["consumer_type"] == \
        "unknown"
    assert api("GET", "/usages?project_id=p", version="1.38").json["usages"] == {
        "unknown": {"consumer_count": 1, "VCPU": 1}}
