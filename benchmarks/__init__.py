"""Benchmarks of rtframework against OpenStack Placement: ``python -m benchmarks``.

One module per benchmark (claims, candidates, periodic, memory) and one for
the growth summary; each returns :class:`benchmarks.results.Figure` and
:class:`benchmarks.results.Verdict` rows that ``__main__`` prints as a table
and writes to ``benchmarks/results/<timestamp>.json``.
"""
