"""The ``sql`` placement backend: providers and allocations in a SQL database.

All SQL of the backend lives in this package: the schema (models), the
reads and writes (queries), allocation writes (allocations), candidate
search (candidates) and input validation (validation).
"""
