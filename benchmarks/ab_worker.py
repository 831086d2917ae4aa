"""One side of ``python -m benchmarks.ab``: the sql backend of one commit.

Run by path (with ``python -P`` from 3.11, so that this file's directory
is not put on the import path; on 3.10 the worker takes it off) and that
commit's checkout as PYTHONPATH, so that ``rtframework`` is the commit's
own: the editable install's finders are taken off the import path too,
and the worker imports nothing else of
ours (the commit's ``benchmarks`` may predate this file). It reads the
database URL and a scratch state directory as its first stdin line
(``--probe`` instead: configure and load the backend's class without a
database, report, exit), opens the backend without migrating, prints
where ``rtframework`` and the backend class came from, then answers one
JSON line per request::

    {"query": {"resources": {...}, "limit": 10, "required_traits": [...]},
     "calls": 5, "digest": true}
    -> {"wall_ms": [...], "cpu_ms": [...], "found": 10, "digest": "9f1c..."}

``digest`` hashes the whole answer of one more, untimed search
(candidates in their order, and summaries), so the two commits' answers
can be compared.
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


def _own_checkout_only() -> None:
    """Nothing of this checkout's on the import path: not this file's
    directory, not the editable install's finders."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
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
    """A hash of the candidates, in their order, and their summaries."""
    requests = [json.dumps(_canonical(r), sort_keys=True) for r in answer.allocation_requests]
    summaries = json.dumps(_canonical(answer.provider_summaries), sort_keys=True)
    return hashlib.sha256("\n".join([*requests, summaries]).encode()).hexdigest()[:16]


def _conf(url: str, state_path: str):
    from rtframework import conf as rtconf

    conf = rtconf.new_conf()
    conf([], project="rtframework", default_config_files=[])
    conf.set_override("state_path", state_path)
    for name, value in {"connection": url, "pool_size": 10, "auto_sync": False}.items():
        conf.set_override(name, value, group="placement_database")
    return conf


def _loaded(backend_cls: type) -> dict:
    import rtframework

    return {"rtframework": rtframework.__file__,
            "backend": sys.modules[backend_cls.__module__].__file__}


def main(argv: list[str]) -> int:
    _own_checkout_only()
    logging.basicConfig(level=logging.WARNING)
    from rtframework import plugins
    from rtframework.placement import backend as backends
    from rtframework.placement import types as t

    if argv == ["--probe"]:
        _conf("sqlite://", ".")
        backend_cls = plugins.load_class(backends.NAMESPACE, "sql", "placement backend",
                                         backends.BackendLoadError)
        print(json.dumps(_loaded(backend_cls)), flush=True)
        return 0
    url, state_path = json.loads(sys.stdin.readline())
    backend = backends.load_backend(_conf(url, state_path), "sql")
    try:
        print(json.dumps(_loaded(type(backend))), flush=True)
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
