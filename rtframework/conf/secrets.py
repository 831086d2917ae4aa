"""Configuration values marked secret, kept out of every message and log line.

One helper, :func:`mask`, serves every path that shows text to an operator:
the CLI's log formatters (console and ``--log-file``), its last-resort
traceback, and the errors that quote a connection URL. It hides

* the password of any URL (``scheme://user:PASSWORD@host``), parsed or not;
* ``key=value`` secrets as oslo.utils' ``mask_password`` knows them
  (``password=``, ``admin_token=``, ...);
* the value of every option registered with ``secret=True`` in ``conf``
  (for a URL, its password only, so host and database stay readable).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from typing import TextIO

from oslo_config import cfg
from oslo_utils import strutils

MASK = "***"
# scheme://user:password@host -- the password up to the "@" that starts the
# host part, so that a "/" or "@" inside a password is hidden too.
_URL_PASSWORD = re.compile(
    r"(?P<head>[A-Za-z][\w+.-]*://[^:/@\s'\"]*:)(?P<pw>[^\s'\"?]*?)"
    r"(?=@[^\s@'\"/?]*(?:[/?\s'\"]|$))")


def mask(text: str, conf: cfg.ConfigOpts | None = None) -> str:
    """``text`` with every secret it quotes replaced by ``***``."""
    for value in _secret_values(conf):
        # Whole words only: a short password must not eat into uuids and
        # numbers that merely contain it.
        text = re.sub(rf"(?<!\w){re.escape(value)}(?!\w)", MASK, text)
    text = _URL_PASSWORD.sub(lambda m: m["head"] + MASK, text)
    return strutils.mask_password(text, secret=MASK)


def _secret_values(conf: cfg.ConfigOpts | None) -> list[str]:
    """What to hide of each secret option's value (a URL's password, else
    the whole value), longest first so no part of one is left behind."""
    if conf is None:
        return []
    found = set()
    for group, opt in _secret_opts():
        try:
            value = conf[group.name if group else opt.dest]
            if group:
                value = value[opt.dest]
        except (cfg.Error, ValueError, KeyError, AttributeError):
            continue  # not registered here, or unreadable: never shown either
        if not isinstance(value, str) or not value:
            continue
        passwords = [m["pw"] for m in _URL_PASSWORD.finditer(value) if m["pw"]]
        found.update(passwords or [value])
    return sorted(found, key=len, reverse=True)


_SECRET_OPTS: list[tuple[cfg.OptGroup | None, cfg.Opt]] | None = None
_listing = threading.local()


def _secret_opts() -> list[tuple[cfg.OptGroup | None, cfg.Opt]]:
    """The framework's options marked secret (keystone's included), listed
    once. Listing them loads keystone's plugins, which log: a line logged
    meanwhile is masked without them (it cannot quote their values)."""
    global _SECRET_OPTS
    if _SECRET_OPTS is not None or getattr(_listing, "busy", False):
        return _SECRET_OPTS or []
    from rtframework.conf import opts

    _listing.busy = True
    try:
        _SECRET_OPTS = [
            (None if group in (None, "DEFAULT") else
             group if isinstance(group, cfg.OptGroup) else cfg.OptGroup(group), opt)
            for group, group_opts in opts.list_opts() for opt in group_opts if opt.secret]
    finally:
        _listing.busy = False
    return _SECRET_OPTS


Conf = Callable[[], "cfg.ConfigOpts | None"]


class MaskingFormatter(logging.Formatter):
    """A formatter whose every line (tracebacks included) passes through :func:`mask`."""

    def __init__(self, inner: logging.Formatter | None, conf: Conf) -> None:
        super().__init__()
        self._inner = inner or logging.Formatter()
        self._conf = conf

    def format(self, record: logging.LogRecord) -> str:
        return mask(self._inner.format(record), self._conf())


class MaskingStream:
    """A text stream passing what is written to it through :func:`mask`."""

    def __init__(self, inner: TextIO, conf: Conf) -> None:
        self._inner = inner
        self._conf = conf

    def write(self, text: str) -> int:
        return self._inner.write(mask(text, self._conf()))

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self._inner, name)
