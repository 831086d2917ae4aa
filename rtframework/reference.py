"""The reference model: what every consumer may hold, in every state.

An oracle written from the moves' rules (which consumer holds which half
of a move, step by step), not from the code that writes allocations:
it imports no move, claim or tracker module, so a checker built on it
(``rtf check``, the soak monitor, the move matrix) judges that code
instead of repeating it. Amounts are per node tree (root provider): a
flavor class served by a device child counts for its node.

Notation: I is the instance's consumer, M the migration's (named by the
migration uuid), S and D the source and destination node trees, ``f`` the
instance's flavor, ``f_old``/``f_new`` a move's flavors. A state lists
every holding it allows; more than one means a write may or may not have
happened yet (the step is in flight), and nothing else is allowed.

An instance with no unfinished migration:

=====================================  ==========================================
vm_state (task_state)                  allowed holdings
=====================================  ==========================================
ACTIVE, RESIZED (idle)                 I:{own: f}
BUILDING (boot), ERROR                 I:{own: f} or I:{} (claim before spawn;
                                       a failed boot releases it)
any state with a task (shelving,       I:{own: f} or I:{} (the step's one write
unshelving, deleting, a move that has  may or may not have happened)
no record yet)
SHELVED_OFFLOADED, DELETED (idle)      I:{}
=====================================  ==========================================

``own`` is the tree of the instance record's host and node; an instance
with no known node may hold nothing (and an idle ACTIVE one is then wrong
whatever it holds).

An instance with an unfinished migration. SOURCE = I:{S: f_old};
DURING = I:{S: f_old, D: f_new} (``doubled``; summed when S is D) or
M:{S: f_old}, I:{D: f_new} (``migration``; an evacuation is always
doubled: its source is down and cannot take a consumer back);
DEST = I:{D: f_new}; a status not listed allows nothing (unknown is wrong):

==============  ==================================  ==========================
kind            status                              allowed holdings
==============  ==================================  ==========================
migration,      pre-migrating                       SOURCE, or DURING once the
resize                                              record names a destination
                migrating, finished                 DURING
                confirming                          DURING or DEST
                reverting                           DURING or SOURCE
live-migration  accepted, pre-migrating             SOURCE, or DURING once the
                                                    record names a destination
                running                             DURING
evacuation      accepted                            SOURCE
                pre-migrating                       SOURCE, or DURING once the
                                                    record names a destination
                migrating, finished                 DURING
==============  ==================================  ==========================

Storage pools (sharing providers, trait MISC_SHARES_VIA_AGGREGATE) serve
every tree they share an aggregate with, and are their own roots: a flavor
class a pool of a tree has may be held on the pool instead of the tree (each
class wholly on one of them), so ``f`` on a tree stands for each such way.
A pool is no host: the disk on it does not move. While a move runs, a pool
both halves hold (the source's f_old and the destination's f_new take the
class from the same pool) is held once, by I, at the larger amount of each
class, with both strategies; M then holds the source half without it. A
pool only one half holds is counted like a tree. Holding the shared amount
twice (summed, or once by I and once by M) is never allowed.

Whatever the status, a deleted instance's move holds nothing at all (I:{},
M:{}). A finished migration (confirmed, reverted, done, error, failed,
cancelled) holds nothing under its own uuid; its instance is judged by its
own state. A failed step therefore either rolls back (the record is closed
and the instance is judged at rest, on the source) or leaves a state no
row above allows, which the checker reports once it is seen twice.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# root provider -> resource class -> amount (no zeros, no empty roots)
Alloc = dict[str, dict[str, int]]

FINAL_STATUSES = frozenset({"confirmed", "reverted", "error", "done", "failed", "cancelled"})

# move kind -> status -> the symbolic holdings allowed (see the table).
SOURCE, DURING, DEST = "source", "during", "destination"
_COLD = {
    "pre-migrating": (SOURCE, DURING),
    "migrating": (DURING,),
    "finished": (DURING,),
    "confirming": (DURING, DEST),
    "reverting": (DURING, SOURCE),
}
MOVE_TABLE: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "migration": _COLD,
    "resize": _COLD,
    "live-migration": {
        "accepted": (SOURCE, DURING),
        "pre-migrating": (SOURCE, DURING),
        "running": (DURING,),
    },
    "evacuation": {
        "accepted": (SOURCE,),
        "pre-migrating": (SOURCE, DURING),
        "migrating": (DURING,),
        "finished": (DURING,),
    },
}


@dataclass(frozen=True)
class Holding:
    """One allowed state: what I and M hold, per root, and its name."""

    name: str
    instance: Alloc
    migration: Alloc

    def matches(self, instance: Alloc, migration: Alloc) -> bool:
        return self.instance == instance and self.migration == migration


NOTHING = Holding("nothing", {}, {})


@dataclass(frozen=True)
class Pool:
    """A storage pool: the classes it has and the roots of the trees it
    serves (those sharing one of its aggregates)."""

    uuid: str
    classes: frozenset[str]
    roots: frozenset[str]


def add(*parts: Mapping[str, Mapping[str, int]]) -> Alloc:
    """Allocations summed root by root and class by class, without zeros."""
    out: Alloc = {}
    for part in parts:
        for root, resources in part.items():
            slot = out.setdefault(root, {})
            for rc, n in resources.items():
                slot[rc] = slot.get(rc, 0) + int(n)
    return {root: {rc: n for rc, n in res.items() if n}
            for root, res in out.items() if any(res.values())}


def by_root(alloc: Mapping[str, Mapping[str, int]], root_of: Mapping[str, str]) -> Alloc:
    """Provider allocations summed per root (an unknown provider is its own root)."""
    return add(*({root_of.get(p, p): r} for p, r in alloc.items()))


def ways(root: str | None, flavor: Mapping[str, int],
         pools: Iterable[Pool] = ()) -> list[Alloc]:
    """Every way ``flavor`` may be held on ``root``'s tree and the pools
    serving it (each class wholly on one of them); without a root, only
    holding nothing."""
    if not root:
        return [{}]
    pools = tuple(pools)
    options = []
    for rc, n in flavor.items():
        if n:
            places = [root] + sorted(p.uuid for p in pools
                                     if root in p.roots and rc in p.classes)
            options.append([(place, rc, int(n)) for place in places])
    return [add(*({place: {rc: n}} for place, rc, n in choice))
            for choice in itertools.product(*options)]


def at_rest(vm_state: str, task_state: str | None, own_root: str | None,
            flavor: Mapping[str, int], pools: Iterable[Pool] = ()) -> tuple[Holding, ...]:
    """What an instance with no unfinished migration may hold."""
    busy = task_state is not None or vm_state in ("BUILDING", "ERROR")
    own = tuple(Holding("its flavor on its own node", w, {})
                for w in ways(own_root, flavor, pools))
    if vm_state in ("ACTIVE", "RESIZED") and not busy:
        # A live idle instance whose node is unknown cannot hold it right.
        return own if own_root else ()
    if own_root is None or not (busy or vm_state in ("ACTIVE", "RESIZED")):
        return (NOTHING,)
    return own + (NOTHING,)


def in_move(kind: str, strategy: str, status: str, *, source_root: str | None,
            dest_root: str | None, f_old: Mapping[str, int], f_new: Mapping[str, int],
            instance_deleted: bool = False, pools: Iterable[Pool] = ()) -> tuple[Holding, ...]:
    """What a move's I and M may hold while its record has ``status``.

    A final status or an unknown kind/status allows nothing here; the
    caller judges the instance at rest then (a final record) or reports it.
    """
    if instance_deleted:
        return (NOTHING,)
    if status in FINAL_STATUSES:
        return ()
    pools = tuple(pools)
    sources = ways(source_root, f_old, pools)
    dests = ways(dest_root, f_new, pools)
    allowed = MOVE_TABLE.get(kind, {}).get(status, ())
    found: list[Holding] = []
    for state in (s for s in allowed if dest_root is not None or s == SOURCE):
        if state == SOURCE:
            found += [Holding("the source only", s, {}) for s in sources]
        elif state == DEST:
            found += [Holding("the destination only", d, {}) for d in dests]
        else:
            found += [_during(kind, strategy, s, d, {p.uuid for p in pools})
                      for s in sources for d in dests]
    return tuple(h for i, h in enumerate(found) if h not in found[:i])


def _during(kind: str, strategy: str, source: Alloc, dest: Alloc,
            pools: set[str]) -> Holding:
    """Both halves, a pool both hold once at the larger amounts, on I."""
    shared = set(source) & set(dest) & pools
    once: Alloc = {p: {rc: max(source[p].get(rc, 0), dest[p].get(rc, 0))
                       for rc in set(source[p]) | set(dest[p])} for p in shared}
    src = {p: r for p, r in source.items() if p not in shared}
    dst = {p: r for p, r in dest.items() if p not in shared}
    if kind == "evacuation" or strategy == "doubled":
        return Holding("both halves on the instance", add(src, dst, once), {})
    return Holding("source on the migration, destination on the instance",
                   add(dst, once), add(src))


def nearest(allowed: Iterable[Holding], instance: Alloc, migration: Alloc) -> Holding | None:
    """The allowed holding that differs least from what is held (None if none allowed)."""
    def distance(h: Holding) -> int:
        return (_diff(h.instance, instance) + _diff(h.migration, migration))
    return min(allowed, key=distance, default=None)


def _diff(a: Alloc, b: Alloc) -> int:
    roots = set(a) | set(b)
    return sum(abs(a.get(r, {}).get(rc, 0) - b.get(r, {}).get(rc, 0))
               for r in roots for rc in set(a.get(r, {})) | set(b.get(r, {})))
