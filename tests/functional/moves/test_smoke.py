"""A migrate + confirm end to end, before the matrix."""

from rtframework.moves import migrate, resize

F = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}


def test_migrate_then_confirm(cloud, config):
    config.config(move_claim_strategy="migration", group="placement")
    cloud.add_host("a")
    cloud.add_host("b")
    vm = cloud.boot("a", F)
    mig = migrate.migrate(cloud.ctx, vm.uuid, to_host=cloud.host("b"))
    assert mig.status == "finished" and mig.dest_host == cloud.host("b")
    assert cloud.allocations(mig.uuid) == {"a": F}
    assert cloud.allocations(vm.uuid) == {"b": F}
    resize.confirm(cloud.ctx, mig.uuid)
    assert cloud.usages() == {"a": {}, "b": F}
