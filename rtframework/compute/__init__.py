"""Compute records: instances, migrations, compute nodes and host services.

Several hosts share these records (PostgreSQL/MySQL); a host owns the
instances recorded with its name. See :mod:`rtframework.compute.store`.
"""
