"""The one loader of plugins (stevedore entry points)."""

from __future__ import annotations

import importlib.metadata

from stevedore import driver, exception


def installed(namespace: str) -> list[str]:
    """Names registered in an entry point group, sorted."""
    return sorted({ep.name for ep in importlib.metadata.entry_points(group=namespace)})


def load_class(namespace: str, name: str, what: str, error: type[Exception]) -> type:
    """Return the class behind entry point ``name`` in ``namespace``.

    Unknown names and plugins that fail to import become one ``error``
    whose message lists what is installed.
    """
    names = installed(namespace)
    unknown = f"unknown {what} {name!r}; installed: {', '.join(names) or 'none'}"
    # Checked here as well as through stevedore's NoMatches so that an
    # unknown name is one error line, without stevedore's own warning.
    if name not in names:
        raise error(unknown)
    try:
        manager = driver.DriverManager(namespace, name, invoke_on_load=False)
    except exception.NoMatches:
        raise error(unknown) from None
    except Exception as exc:  # a broken plugin: ImportError, SyntaxError, ...
        raise error(f"{what} {name!r} failed to load: {type(exc).__name__}: {exc}") from exc
    return manager.driver
