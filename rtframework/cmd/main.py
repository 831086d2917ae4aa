"""Entry point of ``rtf``.

Commands are entry points in the ``rtframework.cli`` group (underscores in
their names become spaces: ``providers_list`` is ``rtf providers list``).
Each command reaches configuration and backends through the app:
``self.app.conf``, ``self.app.backend``, ``self.app.compute``.

Exit status, the same for every command (see :mod:`rtframework.cmd.status`):
0 when all went well, 1 when a step failed, 2 for a usage or configuration
error (nothing was changed), 3 when findings were listed; heal and audit
answer as nova-manage's heal_allocations and placement audit (4: nothing
to heal, allocations removed). A command that printed its result but
failed a step sets ``self.failed``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback

from cliff import help as cliff_help
from cliff.app import App
from cliff.commandmanager import CommandManager

import rtframework
from rtframework import conf as rtconf
from rtframework import history
from rtframework.cmd import status
from rtframework.conf import secrets

LOG = logging.getLogger(__name__)

EXIT_STATUS = status.HELP


def is_usage_error(exc: BaseException) -> bool:
    """Errors that mean "the request was wrong", not "the step failed"."""
    from rtframework.compute import errors as compute_errors
    from rtframework.db import DatabaseNotFound, SchemaNotCurrent
    from rtframework.driver import DriverLoadError
    from rtframework.moves.errors import MoveError
    from rtframework.placement import errors as placement_errors
    from rtframework.placement.backend import BackendLoadError
    from rtframework.tracker import InvalidFlavor, UnknownNode

    # SchemaNotCurrent: auto_sync is off and `rtf db sync` was not run.
    usage = (rtconf.ConfigError, SchemaNotCurrent, DatabaseNotFound, DriverLoadError,
             BackendLoadError, ValueError,
             compute_errors.NotFound, compute_errors.AmbiguousInstance, compute_errors.InvalidValue,
             placement_errors.NotFound, placement_errors.InvalidRequest, InvalidFlavor,
             UnknownNode)
    if isinstance(exc, MoveError) and exc.__cause__ is not None:
        # A move names the instance or migration it could not find.
        return is_usage_error(exc.__cause__)
    return isinstance(exc, usage)


class RtfApp(App):
    # Usage lines say "rtf" however the program was started (python -m ...).
    NAME = "rtf"

    def __init__(self) -> None:
        super().__init__(
            description="rtframework: resource accounting that stays right while instances move",
            version=rtframework.__version__,
            command_manager=CommandManager("rtframework.cli", convert_underscores=True),
            deferred_help=True,
        )
        self._conf = None
        self._backend = None
        self._compute = None
        self._error: BaseException | None = None
        self._failed = False
        self._no_command = False
        # Nothing the CLI prints or logs shows a secret of the configuration.
        self.stderr = secrets.MaskingStream(self.stderr, lambda: self._conf)

    def build_option_parser(self, description, version, argparse_kwargs=None):
        argparse_kwargs = dict(argparse_kwargs or {}, prog=self.NAME, epilog=EXIT_STATUS,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        parser = super().build_option_parser(description, version, argparse_kwargs)
        parser.add_argument(
            "--config-file", action="append", default=None, metavar="PATH",
            help="Configuration file (repeatable; later files win). "
            "Default: $RTF_CONFIG_FILE or /etc/rtframework/rtframework.conf if present.",
        )
        return parser

    def _config_files(self) -> list[str]:
        if self.options.config_file:
            return self.options.config_file
        env = os.environ.get("RTF_CONFIG_FILE")
        if env:
            return [env]
        if os.path.exists(rtconf.DEFAULT_CONFIG_FILE):
            return [rtconf.DEFAULT_CONFIG_FILE]
        return []

    @property
    def conf(self):
        if self._conf is None:
            self._conf = rtconf.load(self._config_files())
        return self._conf

    @property
    def backend(self):
        if self._backend is None:
            from rtframework.placement.backend import load_backend

            self._backend = load_backend(self.conf)
        return self._backend

    @property
    def compute(self):
        if self._compute is None:
            from rtframework.compute.store import ComputeStore

            self._compute = ComputeStore.from_conf(self.conf)
            # Allocation changes a command makes are recorded as made by
            # this host (audit and heal name themselves instead).
            history.enable(self._compute, self.conf.host)
        return self._compute

    def run(self, argv: list[str]) -> int:
        code = super().run(argv)
        return status.USAGE if self._no_command else code

    def interact(self) -> None:
        # No command given: print the help (and the commands) instead of
        # starting an interactive shell that would read commands from stdin.
        # (`rtf --help` asked for it and gets it in print_help_if_requested.)
        self._no_command = True
        try:
            cliff_help.HelpAction([], argparse.SUPPRESS, default=self)(
                self.parser, self.options, None, None)
        except cliff_help.HelpExit:
            pass

    def run_subcommand(self, argv: list[str]) -> int:
        self._error = None
        self._failed = False
        code = super().run_subcommand(argv)
        if code == 1 and self._error is not None and is_usage_error(self._error):
            return status.USAGE
        if code == 0 and self._failed:
            return status.FAILED
        return code

    def prepare_to_run_command(self, cmd):
        # A database failure the stores did not name (a read-only file, a
        # dropped server) still reaches the operator as one line without
        # SQL; --debug shows the SQLAlchemy exception as the cause.
        take_action = cmd.take_action

        def take_action_without_sql(parsed_args):
            import sqlalchemy as sa

            from rtframework import db

            try:
                return take_action(parsed_args)
            except sa.exc.SQLAlchemyError as exc:
                raise db.DatabaseError(f"database error: {db.describe(exc)}") from exc

        cmd.take_action = take_action_without_sql

    def clean_up(self, cmd, result, err):
        self._error = err
        self._failed = bool(getattr(cmd, "failed", False))
        if self._compute is not None:
            history.disable()
        if self._backend is not None:
            self._backend.close()
        if self._compute is not None:
            # Release the records' pooled connections too (a server
            # database counts them against max_connections).
            self._compute.close()

    def configure_logging(self):
        super().configure_logging()
        # Allocation changes are logged at INFO by the library; keep the
        # console quiet unless -v is given.
        # alembic reports every migration step at INFO as well. (NOTSET with
        # -v: a second run in one process must not inherit the first's.)
        quiet = logging.WARNING if self.options.verbose_level <= 1 else logging.NOTSET
        for name in ("rtframework", "alembic"):
            logging.getLogger(name).setLevel(quiet)
        for handler in logging.getLogger().handlers:
            if not isinstance(handler.formatter, secrets.MaskingFormatter):
                handler.setFormatter(secrets.MaskingFormatter(handler.formatter,
                                                              lambda: self._conf))


def main(argv: list[str] | None = None) -> int:
    app = RtfApp()
    try:
        return app.run(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:
        # argparse: 2 after printing a usage error; --help and --version: 0
        # (cliff's help leaves the code None).
        if exc.code is None:
            return status.OK
        return exc.code if isinstance(exc.code, int) else status.USAGE
    except Exception:  # --debug lets the error through: its traceback, masked
        app.stderr.write(traceback.format_exc())
        return status.FAILED


if __name__ == "__main__":
    sys.exit(main())
