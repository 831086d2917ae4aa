"""Who may call what: oslo.policy rules with Placement's names and defaults.

The secure defaults (``[oslo_policy] enforce_new_defaults = True``):
admin or service for everything, service alone for ``/reshaper``, and a
project reader may read its own project's usages. The legacy default
(the deprecated rule, still honoured while ``enforce_new_defaults`` is
False) is ``role:admin``. A policy file overrides any rule by name.
"""

from __future__ import annotations

import webob.exc
from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_policy import policy as oslo_policy

from rtframework.api import errors

ADMIN_OR_SERVICE = "rule:admin_or_service_api"
SERVICE = "rule:service_api"
ADMIN_OR_PROJECT_READER_OR_SERVICE = "rule:admin_or_project_reader_or_service_api"

_LEGACY = oslo_policy.DeprecatedRule(
    name="rule:admin_api", check_str="role:admin",
    deprecated_reason="Placement's policies have reader, admin and service roles "
                      "with project scope.",
    deprecated_since="W")


def _base_rules() -> list[oslo_policy.RuleDefault]:
    return [
        oslo_policy.RuleDefault("admin_api", "role:admin", scope_types=["project"]),
        oslo_policy.RuleDefault("service_api", "role:service", scope_types=["project"],
                                deprecated_rule=_LEGACY),
        oslo_policy.RuleDefault("admin_or_service_api", "role:admin or role:service",
                                scope_types=["project"], deprecated_rule=_LEGACY),
        oslo_policy.RuleDefault("project_reader_api",
                                "role:reader and project_id:%(project_id)s",
                                deprecated_rule=_LEGACY),
        oslo_policy.RuleDefault("admin_or_project_reader_or_service_api",
                                "role:admin or rule:project_reader_api or role:service",
                                scope_types=["project"], deprecated_rule=_LEGACY),
    ]


# Action -> default rule; every one of them project scoped.
ACTIONS: dict[str, str] = {
    **{f"placement:resource_providers:{op}": ADMIN_OR_SERVICE
       for op in ("list", "create", "show", "update", "delete")},
    **{f"placement:resource_providers:inventories:{op}": ADMIN_OR_SERVICE
       for op in ("list", "create", "show", "update", "delete")},
    **{f"placement:resource_providers:aggregates:{op}": ADMIN_OR_SERVICE
       for op in ("list", "update")},
    **{f"placement:resource_providers:traits:{op}": ADMIN_OR_SERVICE
       for op in ("list", "update", "delete")},
    **{f"placement:traits:{op}": ADMIN_OR_SERVICE
       for op in ("list", "show", "update", "delete")},
    **{f"placement:resource_classes:{op}": ADMIN_OR_SERVICE
       for op in ("list", "create", "show", "update", "delete")},
    **{f"placement:allocations:{op}": ADMIN_OR_SERVICE
       for op in ("list", "manage", "update", "delete")},
    "placement:resource_providers:allocations:list": ADMIN_OR_SERVICE,
    "placement:allocation_candidates:list": ADMIN_OR_SERVICE,
    "placement:resource_providers:usages": ADMIN_OR_SERVICE,
    "placement:usages": ADMIN_OR_PROJECT_READER_OR_SERVICE,
    "placement:reshaper:reshape": SERVICE,
}


def list_rules() -> list[oslo_policy.RuleDefault]:
    """Every default rule (the policy generator's entry point)."""
    return _base_rules() + [
        oslo_policy.RuleDefault(name, check, scope_types=["project"])
        for name, check in ACTIONS.items()
    ]


class Enforcer:
    """Checks one request's credentials against one action."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.enforcer = oslo_policy.Enforcer(conf)
        self.enforcer.register_defaults(list_rules())

    def authorize(self, context: oslo_context.RequestContext, action: str,
                  target: dict | None = None) -> None:
        """403 unless ``context`` may do ``action``."""
        target = target if target is not None else {"project_id": context.project_id}
        try:
            allowed = self.enforcer.authorize(action, target, context, do_raise=False)
        except oslo_policy.InvalidScope:
            allowed = False
        if not allowed:
            raise errors.http(webob.exc.HTTPForbidden,
                              f"Policy does not allow {action} to be performed.")
