"""Options of the [api] group: serving Placement's REST API (``rtf api``)."""

from oslo_config import cfg

from rtframework.conf.groups import register_group

api_group = cfg.OptGroup(
    "api",
    title="Placement REST API",
    help="Serving OpenStack Placement's REST API from the configured placement "
    "backend ('rtf api serve', or rtframework.api.wsgi:application under "
    "gunicorn or uWSGI).",
)

# Groups the libraries under the API read and check themselves
# (keystonemiddleware, oslo.policy, oslo.middleware's CORS).
LIBRARY_GROUPS = frozenset({"keystone_authtoken", "oslo_policy", "cors"})

API_OPTS = [
    cfg.StrOpt(
        "auth_strategy", default="keystone", choices=("keystone", "noauth2"),
        help="How requests are authenticated. 'keystone' validates tokens with "
        "keystonemiddleware's auth_token (configured in [keystone_authtoken]); "
        "'noauth2' trusts the X-Auth-Token header as 'user[:project]', the user "
        "'admin' being an admin: for tests and development only, never on a "
        "network others reach.",
    ),
    cfg.HostAddressOpt(
        "bind_host", default="127.0.0.1",
        help="Address 'rtf api serve' listens on. The development server is "
        "single-threaded; serve production traffic with gunicorn or uWSGI.",
    ),
    cfg.PortOpt(
        "bind_port", default=8778,
        help="Port 'rtf api serve' listens on (8778 is Placement's).",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    register_group(conf, api_group)
    conf.register_opts(API_OPTS, group=api_group)


def list_opts():
    return {api_group: API_OPTS}
