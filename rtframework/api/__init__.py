"""OpenStack Placement's REST API (microversions 1.0 to 1.39) served from a
placement backend (the ``sql`` one by default)."""
