"""``rtf api serve``: Placement's REST API on a development server."""

from __future__ import annotations

from wsgiref.simple_server import WSGIRequestHandler, make_server

from cliff.command import Command


class _Handler(WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the stdlib's name
        self.server.log(format % args)


class ApiServe(Command):
    """Serve Placement's REST API from the configured placement backend.

    One process, one request at a time (the embedded SQLite default needs
    no more): for development and tests. Production serves
    rtframework.api.wsgi:application with gunicorn or uWSGI. Listens on
    [api] bind_host (127.0.0.1) and bind_port unless --host/--port say
    otherwise; [api] auth_strategy decides how requests are authenticated.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--host", help="address to listen on (default: [api] bind_host)")
        parser.add_argument("--port", type=int,
                            help="port to listen on (default: [api] bind_port; 0: any free "
                                 "port, printed)")
        return parser

    def take_action(self, parsed_args):
        from rtframework.api.app import make_app

        conf = self.app.conf
        host = parsed_args.host or conf.api.bind_host
        port = conf.api.bind_port if parsed_args.port is None else parsed_args.port
        if not 0 <= port <= 65535:
            raise ValueError(f"--port must be 0 to 65535, got {port}")
        application = make_app(conf, self.app.backend)
        server = make_server(host, port, application, handler_class=_Handler)
        server.log = lambda line: self.app.stderr.write(line + "\n")
        self.app.stdout.write(
            f"serving Placement's API ({conf.placement.backend} backend, auth "
            f"{conf.api.auth_strategy}) on http://{host}:{server.server_port}/\n")
        self.app.stdout.flush()
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
        return 0
