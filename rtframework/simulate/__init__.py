"""``rtf simulate``: a race soak of many hosts, random operations, faults,
and the invariant checker running throughout. See :mod:`.runner`."""
