"""One side of ``python -m benchmarks.ab``: the sql backend of one commit.

Run by path, with that commit's checkout as PYTHONPATH, so that
``rtframework`` is the commit's own: the directory of this file and the
editable install's finders are taken off the import path first, and the
worker imports nothing else of ours (the commit's ``benchmarks`` may
predate this file). It reads the database URL and a scratch state
directory as its first stdin line (``--probe`` instead: import, report,
exit), opens the backend without migrating, prints where ``rtframework``
and the backend class came from, then answers one JSON line per request::

    {"query": {"resources": {...}, "limit": 10, "required_traits": [...]},
     "calls": 5, "digest": true}
    -> {"wall_ms": [...], "cpu_ms": [...], "found": 10, "digest": "9f1c..."}

``digest`` hashes the whole answer of one more, untimed search
(candidates and summaries), so the two commits' answers can be compared.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import sys
import time
from collections.abc import Mapping

_HERE = os.path.dirname(os.path.abspath(__file__))


def _own_checkout_only() -> None:
    """Nothing of this checkout on the import path: not this directory
    (first on sys.path when run by path) nor the editable install."""
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    sys.meta_path[:] = [f for f in sys.meta_path
                        if "__editable__" not in getattr(f, "__module__", "")]


def _canonical(value: object) -> object:
    """The answer as plain JSON values, every mapping and set in order."""
    if dataclasses.is_dataclass(value):
        return {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (set, frozenset)):
        return sorted(_canonical(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value


def digest(answer: object) -> str:
    """A hash of the candidates (in any order) and their summaries."""
    requests = sorted(json.dumps(_canonical(r), sort_keys=True)
                      for r in answer.allocation_requests)
    summaries = json.dumps(_canonical(answer.provider_summaries), sort_keys=True)
    return hashlib.sha256("\n".join([*requests, summaries]).encode()).hexdigest()[:16]


def _backend(url: str, state_path: str):
    from rtframework import conf as rtconf
    from rtframework.placement.backend import load_backend

    conf = rtconf.new_conf()
    conf([], project="rtframework", default_config_files=[])
    conf.set_override("state_path", state_path)
    for name, value in {"connection": url, "pool_size": 10, "auto_sync": False}.items():
        conf.set_override(name, value, group="placement_database")
    return load_backend(conf, "sql")


def _loaded(backend: object = None) -> dict:
    import rtframework

    found = {"rtframework": rtframework.__file__}
    if backend is not None:
        found["backend"] = sys.modules[type(backend).__module__].__file__
    return found


def main(argv: list[str]) -> int:
    _own_checkout_only()
    logging.basicConfig(level=logging.WARNING)
    if argv == ["--probe"]:
        from rtframework import conf  # noqa: F401 - the API the worker uses
        from rtframework.placement import backend, types  # noqa: F401

        print(json.dumps(_loaded()), flush=True)
        return 0
    from rtframework.placement import types as t

    url, state_path = json.loads(sys.stdin.readline())
    backend = _backend(url, state_path)
    try:
        print(json.dumps(_loaded(backend)), flush=True)
        for line in sys.stdin:
            request = json.loads(line)
            q = request["query"]
            query = t.CandidateQuery(resources=q["resources"], limit=q["limit"],
                                     required_traits=frozenset(q["required_traits"]))
            reply: dict = {"wall_ms": [], "cpu_ms": []}
            if request.get("digest"):
                reply["digest"] = digest(backend.get_allocation_candidates(query))
            for _ in range(request["calls"]):
                began, cpu = time.perf_counter(), time.process_time()
                answer = backend.get_allocation_candidates(query)
                reply["wall_ms"].append((time.perf_counter() - began) * 1000)
                reply["cpu_ms"].append((time.process_time() - cpu) * 1000)
                reply["found"] = len(answer.allocation_requests)
            print(json.dumps(reply), flush=True)
    finally:
        backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
