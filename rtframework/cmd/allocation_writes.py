"""``rtf allocations set|unset|delete``, as osc-placement's ``resource
provider allocation set|unset|delete``: an operator's writes on a
consumer's allocations.

The records own what an instance or a move holds: its flavor on its node,
both halves of a move. Writing those by hand would break the accounting,
so these commands refuse a consumer the records say may hold allocations
(a live instance, an unfinished migration) and name the command that
changes it; they act on consumers the records do not own: ones another
service made, orphans, deleted or finished ones. Each write names the
consumer generation it read, and is recorded in the allocation history.
"""

from __future__ import annotations

from cliff.show import ShowOne

from rtframework import audit, history
from rtframework.cmd import arguments, names
from rtframework.cmd.columns import Nested, Optional
from rtframework.cmd.provider_admin import Refused
from rtframework.moves import claims
from rtframework.placement import types as t

_WHO = "operator"
_COLUMNS = ("Consumer", "Allocations", "Consumer generation", "Project", "User")


def _parse_allocation(backend, text: str) -> tuple[str, dict[str, int]]:
    """``rp=PROVIDER,VCPU=1,MEMORY_MB=512`` -> (provider uuid, resources)."""
    provider, resources = None, {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--allocation wants rp=PROVIDER,CLASS=AMOUNT[,...], got {text!r}")
        if key == "rp":
            provider = names.provider_uuid(backend, value)
            continue
        rc = key.strip().upper()
        if rc in resources:
            raise ValueError(f"--allocation {text!r} names {rc} twice")
        try:
            resources[rc] = arguments.amount(value)
        except Exception as exc:
            raise ValueError(f"--allocation {text!r}: {rc}: {exc}") from None
    if provider is None or not resources:
        raise ValueError(f"--allocation wants rp=PROVIDER,CLASS=AMOUNT[,...], got {text!r}")
    return provider, resources


class _ConsumerWrite(ShowOne):
    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("consumer", metavar="CONSUMER", type=arguments.uuid,
                            help="Consumer uuid.")
        return parser

    def refuse_owned(self, consumer: str, what: str) -> None:
        """Refused if the records say ``consumer`` may hold allocations."""
        store = self.app.compute
        if audit.holds_nothing_by_record(store, consumer) is not None:
            return
        migrations = store.list_migrations(uuids=[consumer])
        if migrations:
            m = migrations[0]
            raise Refused(f"consumer {consumer} is the {m.migration_type} {m.uuid} of instance "
                          f"{m.instance_uuid}, {m.status}: its allocations are the move's; "
                          f"finish it (rtf confirm or rtf revert {m.uuid}, rtf compute "
                          f"reconcile); nothing was {what}")
        instance = store.get_instance(consumer)
        raise Refused(f"consumer {consumer} is instance {instance.name}, {instance.vm_state} on "
                      f"{instance.host or 'no host'}: it holds its flavor; change it with rtf "
                      f"resize, rtf heal or rtf delete {instance.name}; nothing was {what}")

    def write(self, held: t.ConsumerAllocations, allocations: t.Allocations,
              project_id: str, user_id: str, why: str):
        backend = self.app.backend
        with history.recording(self.app.compute, _WHO):
            backend.write_allocations([t.AllocationWrite(
                consumer_uuid=held.consumer_uuid, allocations=allocations,
                project_id=project_id, user_id=user_id,
                consumer_generation=held.generation,
                consumer_type=held.consumer_type or "INSTANCE")])
            claims.log_change(held.consumer_uuid, held.allocations, allocations,
                              f"{why} by {_WHO}")
        return self.show(held.consumer_uuid)

    def show(self, consumer: str):
        now = self.app.backend.get_consumer_allocations(consumer)
        return _COLUMNS, (consumer, Nested(now.allocations), Optional(now.generation),
                          Optional(now.project_id), Optional(now.user_id))


class AllocationsSet(_ConsumerWrite):
    """Replace the allocations of a consumer the records do not own."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--allocation", action="append", required=True,
                            metavar="rp=PROVIDER,CLASS=AMOUNT[,...]",
                            help="What the consumer holds on one provider (uuid or name); "
                            "repeat per provider. Everything else it held is removed.")
        parser.add_argument("--project-id", type=arguments.name,
                            help="Project of the consumer (default: the one it has; needed "
                            "for a new consumer).")
        parser.add_argument("--user-id", type=arguments.name,
                            help="User of the consumer (default: the one it has; needed "
                            "for a new consumer).")
        return parser

    def take_action(self, parsed_args):
        consumer = parsed_args.consumer
        if self.app.compute.list_instances(uuids=[consumer]) or \
                self.app.compute.list_migrations(uuids=[consumer]):
            # Even a deleted instance's: a record that holds nothing must not
            # start holding again behind it.
            self.refuse_owned(consumer, "written")
            raise Refused(f"consumer {consumer} is in the records (an instance or a "
                          "migration): their allocations are written by rtf's own "
                          "commands; nothing was written")
        wanted: dict[str, dict[str, int]] = {}
        for text in parsed_args.allocation:
            provider, resources = _parse_allocation(self.app.backend, text)
            if provider in wanted:
                raise ValueError(f"--allocation names provider {provider} twice")
            wanted[provider] = resources
        held = self.app.backend.get_consumer_allocations(consumer)
        project = parsed_args.project_id or held.project_id
        user = parsed_args.user_id or held.user_id
        if not project or not user:
            raise ValueError(f"consumer {consumer} holds nothing yet: give --project-id and "
                             "--user-id")
        return self.write(held, wanted, project, user, "set")


class AllocationsUnset(_ConsumerWrite):
    """Remove a consumer's allocations on a provider (or only some classes)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--provider", action="append", required=True, metavar="PROVIDER",
                            help="Remove what the consumer holds on this provider (uuid or "
                            "name; repeatable).")
        parser.add_argument("--resource-class", action="append", default=[], metavar="CLASS",
                            help="Only these classes on those providers (repeatable; "
                            "default: all).")
        return parser

    def take_action(self, parsed_args):
        backend = self.app.backend
        consumer = parsed_args.consumer
        self.refuse_owned(consumer, "removed")
        providers = {names.provider_uuid(backend, p) for p in parsed_args.provider}
        classes = {rc.strip().upper() for rc in parsed_args.resource_class}
        held = backend.get_consumer_allocations(consumer)
        wanted = {p: {rc: n for rc, n in r.items()
                      if p not in providers or (classes and rc not in classes)}
                  for p, r in held.allocations.items()}
        wanted = {p: r for p, r in wanted.items() if r}
        if claims.normalized(wanted) == claims.normalized(held.allocations):
            raise ValueError(f"consumer {consumer} holds nothing of that on "
                             f"{', '.join(sorted(providers))}; nothing to remove")
        return self.write(held, wanted, held.project_id or "", held.user_id or "", "unset")


class AllocationsDelete(_ConsumerWrite):
    """Remove everything a consumer the records do not own holds."""

    def take_action(self, parsed_args):
        consumer = parsed_args.consumer
        self.refuse_owned(consumer, "removed")
        held = self.app.backend.get_consumer_allocations(consumer)
        if not held.allocations:
            raise ValueError(f"consumer {consumer} holds no allocations")
        return self.write(held, {}, held.project_id or "", held.user_id or "", "deleted")
