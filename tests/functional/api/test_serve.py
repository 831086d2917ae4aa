"""``rtf api serve`` answers over HTTP on the port it prints."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request

import pytest


@pytest.fixture
def served(tmp_path):
    config = tmp_path / "rtframework.conf"
    config.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n[api]\nauth_strategy = noauth2\n")
    rtf = os.path.join(os.path.dirname(sys.executable), "rtf")
    proc = subprocess.Popen([rtf, "--config-file", str(config), "api", "serve", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert match, f"no address printed: {line!r} {proc.stderr.read() if proc.poll() else ''}"
        yield f"http://127.0.0.1:{match.group(1)}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _call(url: str, method: str = "GET", body=None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={
        "x-auth-token": "admin", "openstack-api-version": "placement latest",
        "accept": "application/json", "content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.status, json.loads(resp.read() or b"null")


def test_serve_answers_reads_and_writes_over_http(served):
    status, created = _call(f"{served}/resource_providers", "POST", {"name": "cn1"})
    assert status == 200
    status, listed = _call(f"{served}/resource_providers")
    assert status == 200
    assert [rp["uuid"] for rp in listed["resource_providers"]] == [created["uuid"]]
