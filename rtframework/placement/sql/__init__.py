"""The ``sql`` placement backend: providers and allocations in a SQL database.

All SQL of the backend lives in this package: the schema (models), one
module per object as Placement's ``objects/`` has (providers, inventories,
traits, aggregates, resource_classes, usages, allocation_reads), the
allocation write (allocations, write_plan), candidate search (candidates,
granular) and the reads they share (queries). ``backend`` composes them.
"""
