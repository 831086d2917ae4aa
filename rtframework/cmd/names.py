"""Names where the CLI takes UUIDs, and names beside UUIDs where it shows them.

Providers are found by uuid or by name (names are unique in placement);
consumers by uuid or by the name of an instance (an instance name held by
more than one live instance is refused, the candidates listed).
Migrations are named by uuid only: they have no name.
"""

from __future__ import annotations

import uuid as uuidlib

from rtframework.compute import errors as cerrors
from rtframework.placement import errors as perrors
from rtframework.placement import types as t


def _is_uuid(text: str) -> bool:
    try:
        uuidlib.UUID(text)
    except ValueError:
        return False
    return True


def provider_uuid(backend, ref: str) -> str:
    """The uuid of the provider whose uuid or name is ``ref``."""
    if _is_uuid(ref):
        try:
            return backend.get_provider(ref).uuid
        except perrors.ProviderNotFound:
            pass  # a name may look like a uuid
    found = backend.list_providers(t.ProviderQuery(name=ref))
    if not found:
        raise perrors.ProviderNotFound(f"no resource provider with uuid or name {ref!r}")
    return found[0].uuid


class OneProvider:
    """Base of a command about one provider, named by uuid or name (put it
    before the cliff command class)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("provider", metavar="PROVIDER", help="Provider uuid or name.")
        return parser

    def provider_uuid(self, parsed_args) -> str:
        return provider_uuid(self.app.backend, parsed_args.provider)

    def provider(self, parsed_args) -> t.ResourceProvider:
        return self.app.backend.get_provider(self.provider_uuid(parsed_args))


def consumer_uuid(store, ref: str) -> str:
    """The consumer ``ref`` names: an instance (uuid or unique name), or any
    consumer uuid (a migration's, or one no record knows)."""
    try:
        return store.lookup_instance(ref).uuid
    except cerrors.InstanceNotFound:
        if _is_uuid(ref):
            return ref
        raise cerrors.InstanceNotFound(
            f"no instance with uuid or name {ref!r}, and it is not a consumer uuid") from None


class Names:
    """uuid -> name of providers and consumers, read once per command."""

    def __init__(self, backend, store) -> None:
        self._backend = backend
        self._store = store
        self._providers: dict[str, str] | None = None
        self._consumers: dict[str, str] | None = None

    def provider(self, uuid: str | None) -> str:
        if not uuid:
            return ""
        if self._providers is None:
            self._providers = {rp.uuid: rp.name for rp in self._backend.list_providers()}
        return self._providers.get(uuid, "")

    def consumer(self, uuid: str | None) -> str:
        """The instance's name, "migration of NAME" for a migration's consumer."""
        if not uuid:
            return ""
        if self._consumers is None:
            instances = {i.uuid: i.name for i in self._store.list_instances()}
            self._consumers = dict(instances)
            for m in self._store.list_migrations():
                self._consumers[m.uuid] = (
                    f"migration of {instances.get(m.instance_uuid, m.instance_uuid)}")
        return self._consumers.get(uuid, "")
