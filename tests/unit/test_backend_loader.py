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


def test_an_entry_point_that_is_not_a_backend_is_refused(conf, monkeypatch):
    from rtframework import plugins

    class NotABackend:
        def __init__(self, conf):
            raise AssertionError("must not be built")

    monkeypatch.setattr(plugins, "load_class", lambda *a: NotABackend)
    with pytest.raises(backend.BackendLoadError, match="not a subclass of .*PlacementBackend"):
        backend.load_backend(conf, "fake-backend")


def test_register_opts_runs_before_the_backend_is_built(conf, monkeypatch):
    from oslo_config import cfg

    from rtframework import plugins

    class Registering(backend.PlacementBackend):
        @classmethod
        def register_opts(cls, conf):
            conf.register_opts([cfg.StrOpt("zone", default="z1")], group="acme_backend")

        def __init__(self, conf):
            self.zone = conf.acme_backend.zone

    Registering.__abstractmethods__ = frozenset()
    monkeypatch.setattr(plugins, "load_class", lambda *a: Registering)
    assert backend.load_backend(conf, "acme").zone == "z1"


@pytest.mark.parametrize("name", ["sql", "http"])
def test_bundled_backends_register_opts_twice_harmlessly(conf, name):
    from rtframework import plugins

    cls = plugins.load_class(backend.NAMESPACE, name, "placement backend", RuntimeError)
    cls.register_opts(conf)
    cls.register_opts(conf)
    assert conf.placement_database.pool_size == 5
    assert conf.placement.backend == "sql"
