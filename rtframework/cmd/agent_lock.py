"""One agent per host: ``rtf compute run`` holds a lock for its host.

Two agents of one host would both recover its interrupted moves and both
report its nodes, each undoing the other's work. The lock is an
exclusive ``flock`` on a file in the temporary directory, named for the
host and the database the agent records in (two clouds on one machine
may both have a host h1); the kernel releases it when the agent's
process ends, however it ends. Agents of one host name on two machines
are not seen by it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from typing import IO

from oslo_config import cfg

from rtframework import db

# Locks this process holds, by path: a process runs one agent per host
# (tests run the command again in one process; the lock is kept till exit).
_held: dict[str, IO[str]] = {}


class AgentRunning(Exception):
    """Another agent of the host runs on this machine."""


def _path(conf: cfg.ConfigOpts, host: str) -> str:
    key = f"{db.connection_url(conf, 'database')}\0{host}".encode()
    return os.path.join(tempfile.gettempdir(),
                        f"rtf-agent-{hashlib.sha256(key).hexdigest()[:16]}.lock")


def acquire(conf: cfg.ConfigOpts, host: str) -> IO[str]:
    """Hold the agent lock of ``host`` until the process ends;
    AgentRunning naming the holder's pid if another process holds it."""
    path = _path(conf, host)
    if path in _held:
        return _held[path]
    lock = open(path, "a+")  # noqa: SIM115 - held for the life of the agent
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().strip() or "unknown"
        lock.close()
        raise AgentRunning(
            f"an agent of host {host} runs already on this machine (pid {holder}, lock "
            f"{path}); two agents of one host would undo each other's work: stop that one "
            "first") from None
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()}\n")
    lock.flush()
    _held[path] = lock
    return lock
