"""PostgreSQL: an allocation write in one statement when it surely succeeds.

The general write (:mod:`allocations`) reads in two statements, decides in
Python and writes its plan in a third, in a transaction. On PostgreSQL
most writes do all of that in one statement, run on its own (no BEGIN or
COMMIT round trips: the statement is its transaction). It reads the
consumers, the touched providers and their usage from one snapshot and
checks in SQL a condition *sufficient* for the write to be valid (every
consumer generation as given, every existing consumer holding something;
every provider and inventory present; every amount within min_unit,
max_unit and step_size; no class over capacity). Then it locks the touched
providers in id order and compares their generations, now current, with
the snapshot's; then it locks the named consumers and compares their
generations, now current, with the ones given. Only if all of that holds
does it bump them and write the rows; otherwise it writes nothing. (So the
statement does not rely on every other writer of a consumer bumping the
providers it holds.) A consumer that holds nothing is left to the general
write, which names the conflict. A consumer created meanwhile makes the
statement fail on the unique uuid, so nothing of it stays either.

Whatever the statement declines, the caller hands to the general write,
which names the error exactly or retries the race: the fast path decides
nothing the general write would decide otherwise; it can only decline.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

import sqlalchemy as sa

from rtframework.placement import types as t
from rtframework.placement.sql import queries

LOG = logging.getLogger("rtframework.placement.sql.allocations")

# w: the writes; r: the requested rows; c: the named consumers as stored;
# held: what they hold now; p: every touched provider (requested or held);
# need: requested amount per provider and class against its inventory and
# its stored usage. "counted": that usage, changed by what the write adds
# and removes.
# "go": the snapshot says the write is valid. "locked": the providers,
# locked in id order, with their generations as of now. "steady": go, and
# no provider went away or changed since the snapshot. "clocked": then the
# named consumers, locked (after the providers, as the general write does)
# and read as of now. "hit": steady, and every consumer generation as
# given; every write requires it.
_STATEMENT = """
WITH w AS (
    SELECT * FROM unnest(:w_uuids ::varchar[], :w_gens ::integer[], :w_projects ::varchar[],
                         :w_users ::varchar[], :w_types ::varchar[], :w_holds ::boolean[])
        AS w(uuid, generation, project_id, user_id, consumer_type, holds)
), r AS (
    SELECT * FROM unnest(:r_consumers ::varchar[], :r_providers ::varchar[],
                         :r_classes ::varchar[], :r_used ::integer[])
        AS r(consumer, provider, rc, used)
), c AS (
    SELECT uuid, generation FROM consumers WHERE uuid = ANY(:w_uuids ::varchar[])
), held AS (
    SELECT resource_provider_id AS pid, resource_class AS rc, sum(used) AS used
    FROM allocations WHERE consumer_id = ANY(:w_uuids ::varchar[]) GROUP BY 1, 2
), p AS (
    SELECT id, uuid, generation FROM resource_providers
    WHERE uuid = ANY(:r_providers ::varchar[]) OR id = ANY(ARRAY(SELECT pid FROM held))
), want AS (
    SELECT p.id AS pid, r.rc, r.used, i.min_unit, i.max_unit, i.step_size,
           (i.total - i.reserved) * i.allocation_ratio AS cap, i.used AS current
    FROM r LEFT JOIN p ON p.uuid = r.provider
    LEFT JOIN inventories i ON i.resource_provider_id = p.id AND i.resource_class = r.rc
), need AS (
    SELECT pid, rc, sum(used) AS amount, max(cap) AS cap, max(current) AS current
    FROM want GROUP BY pid, rc
), go AS (
    SELECT NOT EXISTS (
        SELECT 1 FROM w LEFT JOIN c ON c.uuid = w.uuid
        WHERE c.generation IS DISTINCT FROM w.generation
    ) AND NOT EXISTS (
        SELECT 1 FROM want WHERE cap IS NULL OR used < min_unit OR used > max_unit
                              OR used % step_size <> 0
    ) AND NOT EXISTS (
        SELECT 1 FROM need
        WHERE need.current
              - coalesce((SELECT h.used FROM held h WHERE h.pid = need.pid AND h.rc = need.rc), 0)
              + need.amount > need.cap
    ) AND NOT EXISTS (
        SELECT 1 FROM c WHERE NOT EXISTS (SELECT 1 FROM allocations a
                                          WHERE a.consumer_id = c.uuid)
    ) AS ok
), locked AS (
    SELECT id, generation FROM resource_providers
    WHERE (SELECT ok FROM go) AND id = ANY(ARRAY(SELECT id FROM p))
    ORDER BY id FOR UPDATE
), steady AS (
    SELECT (SELECT ok FROM go)
       AND (SELECT count(*) FROM locked) = (SELECT count(*) FROM p)
       AND NOT EXISTS (SELECT 1 FROM locked JOIN p ON p.id = locked.id
                       WHERE locked.generation <> p.generation) AS ok
), clocked AS (
    SELECT uuid, generation FROM consumers
    WHERE (SELECT ok FROM steady) AND uuid = ANY(:w_uuids ::varchar[])
    ORDER BY uuid FOR UPDATE
), hit AS (
    SELECT (SELECT ok FROM steady)
       AND NOT EXISTS (SELECT 1 FROM w LEFT JOIN clocked ON clocked.uuid = w.uuid
                       WHERE clocked.generation IS DISTINCT FROM w.generation) AS ok
), bumped AS (
    UPDATE resource_providers SET generation = generation + 1
    WHERE (SELECT ok FROM hit) AND id IN (SELECT id FROM locked)
), replaced AS (
    DELETE FROM allocations a USING resource_providers rp
    WHERE (SELECT ok FROM hit) AND a.consumer_id = ANY(:w_uuids ::varchar[])
      AND rp.id = a.resource_provider_id
    RETURNING a.consumer_id, rp.uuid, rp.name, a.resource_class, a.used
), inserted AS (
    INSERT INTO allocations (resource_provider_id, consumer_id, resource_class, used)
    SELECT p.id, r.consumer, r.rc, r.used FROM r JOIN p ON p.uuid = r.provider
    WHERE (SELECT ok FROM hit)
), counted AS (
    UPDATE inventories i SET used = i.used + d.delta
    FROM (SELECT pid, rc, sum(used) AS delta
          FROM (SELECT p.id AS pid, r.rc, r.used FROM r JOIN p ON p.uuid = r.provider
                UNION ALL SELECT pid, rc, -used FROM held) AS change
          GROUP BY pid, rc) AS d
    WHERE (SELECT ok FROM hit) AND i.resource_provider_id = d.pid AND i.resource_class = d.rc
      AND d.delta <> 0
), created AS (
    INSERT INTO consumers (uuid, project_id, user_id, generation, consumer_type)
    SELECT uuid, project_id, user_id, 1, consumer_type FROM w
    WHERE (SELECT ok FROM hit) AND w.generation IS NULL AND w.holds
), kept AS (
    UPDATE consumers SET generation = consumers.generation + 1, project_id = w.project_id,
                         user_id = w.user_id, consumer_type = w.consumer_type
    FROM w
    WHERE (SELECT ok FROM hit) AND w.holds AND consumers.uuid = w.uuid
      AND consumers.generation = w.generation
), forgotten AS (
    DELETE FROM consumers USING w
    WHERE (SELECT ok FROM hit) AND NOT w.holds AND consumers.uuid = w.uuid
      AND consumers.generation = w.generation
)
SELECT (SELECT ok FROM hit),
       (SELECT coalesce(json_agg(json_build_array(consumer_id, uuid, name, resource_class,
                                                  used)), '[]') FROM replaced),
       (SELECT coalesce(json_object_agg(resource_providers.uuid, resource_providers.name), '{}')
        FROM resource_providers WHERE resource_providers.uuid = ANY(:r_providers ::varchar[]))
"""

# The statement is prepared once per session (planning it costs more than
# running it), on sessions of its own with these settings: one generic plan,
# built without sequential scans. Left to the planner, the generic plan
# follows the statistics of the moment, and while the consumers and
# allocations tables are new (no statistics yet) or churned, it scans them
# whole: on a benchmark's growing tables a write took 2.0 ms of server time
# that way, 0.3 ms through the indexes (0.8 ms of planning more with a
# custom plan each time). Every lookup here is by a key with an index.
# plan_cache_mode came with PostgreSQL 12; an older server runs the
# statement on the backend's ordinary sessions.
SESSION_SETTINGS = {"plan_cache_mode": "force_generic_plan", "enable_seqscan": "off"}
SESSION_SETTINGS_SINCE = (12,)
# Parameters in this order, typed as the text casts them.
_PARAMS = ("w_uuids", "w_gens", "w_projects", "w_users", "w_types", "w_holds",
           "r_consumers", "r_providers", "r_classes", "r_used")
_TYPES = dict(re.findall(r":(\w+) ::(\w+\[\])", _STATEMENT))
_NAME = "rtf_allocation_write"
_PREPARE = sa.text(
    f"PREPARE {_NAME}({', '.join(_TYPES[p] for p in _PARAMS)}) AS "
    + re.sub(r":(\w+) ::\w+\[\]", lambda m: f"${_PARAMS.index(m[1]) + 1}", _STATEMENT))
_EXECUTE = sa.text(
    f"EXECUTE {_NAME}({', '.join(f':{p} ::{_TYPES[p]}' for p in _PARAMS)})")
_PREPARED = "rtf_allocation_write_prepared"
# A connection that lost it (a pooling proxy between us and the server).
_UNDEFINED_PREPARED_STATEMENT = "26000"
_DUPLICATE_PREPARED_STATEMENT = "42P05"


def statements(dialect: sa.Dialect) -> tuple[str, str]:
    """The PREPARE and the EXECUTE of the write as a DBAPI cursor of
    ``dialect`` takes them, for running the statement alone (benchmarks);
    the EXECUTE takes :func:`parameters`."""
    return _PREPARE.text, str(_EXECUTE.compile(dialect=dialect))


def parameters(writes: Sequence[t.AllocationWrite]) -> dict[str, list]:
    """The statement's parameters for ``writes``: a list per parameter."""
    params: dict[str, list] = {k: [] for k in _PARAMS}
    for w in writes:
        params["w_uuids"].append(w.consumer_uuid)
        params["w_gens"].append(w.consumer_generation)
        params["w_projects"].append(w.project_id)
        params["w_users"].append(w.user_id)
        params["w_types"].append(w.consumer_type)
        params["w_holds"].append(any(w.allocations.values()))
        for provider, resources in w.allocations.items():
            for rc, amount in resources.items():
                params["r_consumers"].append(w.consumer_uuid)
                params["r_providers"].append(provider)
                params["r_classes"].append(rc)
                params["r_used"].append(amount)
    return params


def try_write(conn: sa.Connection, writes: Sequence[t.AllocationWrite]) -> bool:
    """Write ``writes`` in one statement if it surely succeeds (``conn``
    in autocommit mode); False when it declined and wrote nothing."""
    params = parameters(writes)
    info = conn.connection.info
    if not info.get(_PREPARED):
        try:
            conn.execute(_PREPARE)
        except sa.exc.ProgrammingError as exc:
            # Already there: this session prepared it before the flag was set.
            if getattr(exc.orig, "pgcode", None) != _DUPLICATE_PREPARED_STATEMENT:
                raise
        info[_PREPARED] = True
    try:
        written, replaced, names = conn.execute(_EXECUTE, params).one()
    except sa.exc.DBAPIError as exc:
        if getattr(exc.orig, "pgcode", None) == _UNDEFINED_PREPARED_STATEMENT:
            info.pop(_PREPARED, None)
            return False
        raise
    if not written:
        return False
    if LOG.isEnabledFor(logging.INFO):
        _log_changes(writes, replaced, names)
    return True


def _log_changes(writes: Sequence[t.AllocationWrite], replaced: list, names: dict) -> None:
    old: dict[str, dict[str, dict[str, int]]] = {}
    for consumer, provider, name, rc, used in replaced:
        per = old.setdefault(consumer, {}).setdefault(provider, {})
        per[rc] = per.get(rc, 0) + used
        names.setdefault(provider, name)
    labels = {uuid: f"{uuid} ({name})" for uuid, name in names.items()}
    for w in writes:
        queries.log_allocation_change(LOG, w, old.get(w.consumer_uuid, {}), labels)
