"""Move operations: cold migrate, resize, live migrate, evacuate.

Every move holds resources on both hosts while it runs and ends with
exactly one side; see ``claims`` for how, and ``state`` for the allowed
transitions of a migration record.
"""
