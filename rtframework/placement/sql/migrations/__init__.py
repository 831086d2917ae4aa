"""Alembic migrations of the sql placement backend (a package so that
wheels ship them)."""
