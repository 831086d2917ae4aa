"""Choosing a placement backend by name."""

import pytest

from rtframework.placement import backend


def test_unknown_backend_lists_installed_ones(conf, config):
    config.config(backend="etcd", group="placement")
    with pytest.raises(backend.BackendLoadError) as err:
        backend.load_backend(conf)
    message = str(err.value)
    assert "unknown placement backend 'etcd'" in message
    assert "http" in message and "sql" in message
