"""The exit statuses of ``rtf``: one per kind of outcome, the same in
every command; ``heal`` and ``audit`` answer as nova-manage's
``placement heal_allocations`` and ``placement audit`` do.

doc/source/reference/exit-statuses.rst is the operator's copy of
:data:`HELP` (a test keeps the two together).
"""

from __future__ import annotations

OK = 0
# A step failed (a refused move, a failed provider update, a failed live
# migration); heal: --max-count stopped it with instances left to heal.
FAILED = 1
# The request was wrong: bad arguments or options, an unknown or ambiguous
# name, a missing or invalid configuration, a database that does not exist.
# Nothing was changed.
USAGE = 2
# check and audit: findings listed and left as they are; heal: an instance
# could not be healed (no room on its node, its node gone, refused).
FINDINGS = 3
# heal: nothing to heal. audit --delete: allocations were removed.
HEAL_NOTHING_TO_DO = 4
AUDIT_DELETED = 4

HELP = """exit status:
  0  done (check, audit: nothing found; heal: healed every instance it
     had to; audit --delete: nothing found)
  1  a step failed (a refused move, a failed provider update, a failed
     live migration); heal: --max-count reached with more to heal
  2  usage or configuration error: bad arguments or options, an unknown
     or ambiguous name, a missing or invalid configuration, a database
     that does not exist; nothing changed
  3  findings: check or audit found something and left it (audit
     --delete: something it does not remove); heal: an instance could
     not be healed
  4  heal: nothing to heal; audit --delete: allocations were removed and
     nothing else was found

running rtf without a command prints this help (exit status 2)."""
