"""One side of ``python -m benchmarks.ab``: the sql backend of one commit.

Run by path, with that commit's checkout first on PYTHONPATH, so that
``rtframework`` is the commit's own; it imports nothing else of ours (the
commit's ``benchmarks`` may predate this file). Arguments: the database
URL and a scratch state directory. It prints where ``rtframework`` came
from, then answers one JSON line per request line on stdin::

    {"query": {"resources": {...}, "limit": 10, "required_traits": [...]},
     "calls": 5, "digest": true}
    -> {"wall_ms": [...], "cpu_ms": [...], "found": 10, "digest": "9f1c..."}

``digest`` (asked for once per case) hashes the whole answer, candidates
and summaries, so the two commits' answers can be compared.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import sys
import time
from collections.abc import Mapping


def _canonical(value):
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


def digest(answer) -> str:
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
    conf.set_override("connection", url, group="placement_database")
    conf.set_override("pool_size", 10, group="placement_database")
    return load_backend(conf, "sql")


def main(url: str, state_path: str) -> int:
    logging.basicConfig(level=logging.WARNING)
    import rtframework
    from rtframework.placement import types as t

    print(json.dumps({"rtframework": rtframework.__file__}), flush=True)
    backend = _backend(url, state_path)
    try:
        for line in sys.stdin:
            request = json.loads(line)
            q = request["query"]
            query = t.CandidateQuery(resources=q["resources"], limit=q["limit"],
                                     required_traits=frozenset(q["required_traits"]))
            reply: dict = {"wall_ms": [], "cpu_ms": []}
            if request.get("digest"):
                answer = backend.get_allocation_candidates(query)
                reply["digest"] = digest(answer)
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
    sys.exit(main(*sys.argv[1:]))
