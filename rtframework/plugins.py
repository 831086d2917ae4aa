"""The one loader of plugins (stevedore entry points)."""

from __future__ import annotations

import importlib.metadata

from stevedore import driver, exception


def installed(namespace: str) -> list[str]:
    """Names registered in an entry point group, sorted."""
    return sorted({ep.name for ep in importlib.metadata.entry_points(group=namespace)})


def _quiet(_missing_names) -> None:
    """Unknown names are raised as one error by load_class; no extra log."""


def load_class(namespace: str, name: str, what: str, error: type[Exception]) -> type:
    """Return the class behind entry point ``name`` in ``namespace``.

    Unknown names and plugins that fail to import become one ``error``
    whose message lists what is installed.
    """
    try:
        # The unknown-name case is reported below, with what is installed.
        manager = driver.DriverManager(namespace, name, invoke_on_load=False,
                                       on_missing_entrypoints_callback=_quiet)
    except exception.NoMatches:
        raise error(
            f"unknown {what} {name!r}; installed: {', '.join(installed(namespace)) or 'none'}"
        ) from None
    except Exception as exc:  # a broken plugin: ImportError, SyntaxError, ...
        raise error(f"{what} {name!r} failed to load: {type(exc).__name__}: {exc}") from exc
    return manager.driver
