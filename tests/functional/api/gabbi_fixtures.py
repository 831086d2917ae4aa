"""Fixtures of the names Placement's gabbi files ask for, built through
our backend.

Each one makes the same providers, inventories, traits, aggregates and
allocations as Placement's fixture of that name, write by write in the
same order, so the generations the YAML files expect come out the same;
each YAML file gets a fresh database. Environment variables are set as
Placement's fixtures set them (the YAML files read them).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import uuid as uuidlib
from collections.abc import Iterator

from gabbi import fixture

from rtframework import conf as rtconf
from rtframework.api import app as api_app
from rtframework.placement import types as t
from rtframework.placement.backend import load_backend
from tests.fixtures import databases

# The application of the YAML file being run (gabbi builds the intercept
# before the fixtures start, so the app looks it up per request).
_CURRENT: dict = {}


def setup_app():
    def app(environ, start_response):
        return _CURRENT["app"](environ, start_response)
    return app


@contextlib.contextmanager
def _fresh_database(tmp: str) -> Iterator[str]:
    """A new database with the schema: on PostgreSQL a copy of a template
    migrated once per run (CREATE DATABASE ... TEMPLATE), 79 migrations
    saved; elsewhere a temporary database the backend migrates."""
    engine = databases.selected_engine()
    if engine != "postgresql":
        with databases.temporary_database(engine, tmp) as url:
            yield url
        return
    import psycopg2

    template = _pg_template()
    name = f"rtf_gabbi_{uuidlib.uuid4().hex[:12]}"
    admin = psycopg2.connect(host="127.0.0.1", port=5432, user="postgres", dbname="postgres")
    admin.autocommit = True
    try:
        with admin.cursor() as cur:
            cur.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        yield f"{databases.PG_ADMIN}/{name}"
    finally:
        with admin.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


_TEMPLATE: dict[str, object] = {}


def _pg_template() -> str:
    """The migrated template database of this run (dropped at exit)."""
    if "name" not in _TEMPLATE:
        tmp = tempfile.mkdtemp(prefix="rtf-gabbi-template-")
        holder = databases.temporary_database("postgresql", tmp)
        url = holder.__enter__()
        conf = rtconf.new_conf()
        conf([], default_config_files=[])
        conf.set_override("connection", url, "placement_database")
        load_backend(conf).close()  # runs the migrations
        _TEMPLATE["name"] = url.rsplit("/", 1)[1]
        atexit.register(holder.__exit__, None, None, None)
    return str(_TEMPLATE["name"])


def _new_uuid() -> str:
    return str(uuidlib.uuid4())


class World:
    """Writes through the backend as Placement's fixture helpers do."""

    def __init__(self, backend) -> None:
        self.be = backend

    def provider(self, name: str, *aggregates: str, parent: str | None = None,
                 uuid: str | None = None) -> str:
        rp = self.be.create_provider(name, uuid=uuid or _new_uuid(), parent_uuid=parent)
        if aggregates:
            self.aggregates(rp.uuid, *aggregates)
        return rp.uuid

    def aggregates(self, rp: str, *aggregates: str) -> None:
        # Placement's fixtures set aggregates without a generation bump.
        gen = self.be.get_provider(rp).generation
        self.be.set_provider_aggregates(rp, gen, frozenset(aggregates), bump=False)

    def inventory(self, rp: str, rc: str, total: int, **fields) -> None:
        self.be.ensure_resource_class(rc)
        fields.setdefault("max_unit", total)
        gen = self.be.get_provider(rp).generation
        self.be.set_inventory(rp, gen, rc, t.Inventory(total=total, **fields))

    def traits(self, rp: str, *names: str) -> None:
        for name in names:
            self.be.ensure_trait(name)
        gen = self.be.get_provider(rp).generation
        self.be.set_provider_traits(rp, gen, frozenset(names))

    def allocate(self, rp: str, consumer: str, resources: dict[str, int], *,
                 project: str, user: str) -> None:
        held = self.be.get_consumer_allocations(consumer)
        self.be.write_allocations([t.AllocationWrite(
            consumer_uuid=consumer, allocations={rp: resources}, project_id=project,
            user_id=user, consumer_generation=held.generation,
            # Placement's fixtures create consumers without a type.
            consumer_type=held.consumer_type)])


_ENV_UUIDS = ("RP_UUID", "RP_NAME", "RP_UUID1", "RP_NAME1", "RP_UUID2", "RP_NAME2",
              "PROJECT_ID", "ADMIN_PROJECT_ID", "SERVICE_PROJECT_ID", "USER_ID",
              "PROJECT_ID_ALT", "USER_ID_ALT", "INSTANCE_UUID", "MIGRATION_UUID",
              "CONSUMER_UUID", "PARENT_PROVIDER_UUID", "ALT_PARENT_PROVIDER_UUID")


class APIFixture(fixture.GabbiFixture):
    """A fresh database and application, nothing in it."""

    secure_rbac = False

    def start_fixture(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="rtf-gabbi-")
        self.database = _fresh_database(self.tmp)
        url = self.database.__enter__()
        conf = rtconf.new_conf()
        conf([], default_config_files=[])
        conf.set_override("connection", url, "placement_database")
        conf.set_override("auth_strategy", "noauth2", "api")
        self.conf = conf
        self.backend = load_backend(conf)
        app = api_app.make_app(conf, self.backend)
        conf.set_override("enforce_new_defaults", self.secure_rbac, "oslo_policy")
        _CURRENT["app"] = app
        for name in _ENV_UUIDS:
            os.environ[name] = _new_uuid()
        os.environ["CUSTOM_RES_CLASS"] = "CUSTOM_IRON_NFV"
        os.environ["CUSTOM_RES_CLASS1"] = "CUSTOM_IRON_NFV1"
        os.environ["CUSTOM_RES_CLASS2"] = "CUSTOM_IRON_NFV2"
        self.world = World(self.backend)
        self.make_entities()

    def make_entities(self) -> None:
        """The data of this fixture (none for the bare APIFixture)."""

    def stop_fixture(self) -> None:
        _CURRENT.pop("app", None)
        self.backend.close()
        self.database.__exit__(None, None, None)
        shutil.rmtree(self.tmp, ignore_errors=True)


class SecureRBACPolicyFixture(APIFixture):
    secure_rbac = True


class LegacyRBACPolicyFixture(APIFixture):
    secure_rbac = False


class OpenPolicyFixture(APIFixture):
    """Every rule but admin_api open to anyone."""

    def make_entities(self) -> None:
        from oslo_policy import policy as oslo_policy

        from rtframework.api import policy
        rules = {r.name: "@" for r in policy.list_rules() if r.name != "admin_api"}
        _enforcer_of(_CURRENT["app"]).set_rules(oslo_policy.Rules.from_dict(rules),
                                                overwrite=True, use_conf=False)


def _enforcer_of(app):
    """The oslo.policy enforcer inside the application's middleware."""
    while not isinstance(app, api_app.Router):
        app = getattr(app, "application", None) or app.app
    enforcer = app.enforcer.enforcer
    enforcer.load_rules()
    return enforcer


class AllocationFixture(APIFixture):
    """One provider (VCPU 10, DISK_GB 2048) and three consumers on it."""

    def make_entities(self) -> None:
        w = self.world
        os.environ["ALT_USER_ID"] = _new_uuid()
        project, user = os.environ["PROJECT_ID"], os.environ["USER_ID"]
        alt_user = os.environ["ALT_USER_ID"]
        rp = w.provider(os.environ["RP_NAME"], uuid=os.environ["RP_UUID"])
        w.inventory(rp, "DISK_GB", 2048, step_size=10, min_unit=10, max_unit=1000)
        w.inventory(rp, "VCPU", 10, max_unit=10)
        consumer1 = _new_uuid()
        w.allocate(rp, consumer1, {"DISK_GB": 1000}, project=project, user=user)
        os.environ["CONSUMER_0"] = consumer1
        consumer2 = _new_uuid()
        w.allocate(rp, consumer2, {"VCPU": 6}, project=project, user=user)
        os.environ["CONSUMER_ID"] = consumer2
        alt_consumer = _new_uuid()
        os.environ["ALT_CONSUMER_ID"] = alt_consumer
        w.allocate(rp, alt_consumer, {"DISK_GB": 20, "VCPU": 1}, project=project,
                   user=alt_user)
        os.environ["ALT_RP_UUID"] = _new_uuid()
        os.environ["ALT_RP_NAME"] = _new_uuid()


class SharedStorageFixture(APIFixture):
    """Two compute nodes with NUMA and PF children, two sharing disks."""

    def make_entities(self) -> None:
        w = self.world
        agg = _new_uuid()
        cn1, cn2 = w.provider("cn1", agg), w.provider("cn2", agg)
        ss, ss2 = w.provider("ss", agg), w.provider("ss2", agg)
        numa1_1 = w.provider("numa1_1", parent=cn1)
        numa1_2 = w.provider("numa1_2", parent=cn1)
        numa2_1 = w.provider("numa2_1", parent=cn2)
        numa2_2 = w.provider("numa2_2", parent=cn2)
        pf1_1 = w.provider("pf1_1", parent=numa1_1)
        pf1_2 = w.provider("pf1_2", parent=numa1_2)
        pf2_1 = w.provider("pf2_1", parent=numa2_1)
        pf2_2 = w.provider("pf2_2", parent=numa2_2)
        _export(AGG_UUID=agg, CN1_UUID=cn1, CN2_UUID=cn2, SS_UUID=ss, SS2_UUID=ss2,
                NUMA1_1_UUID=numa1_1, NUMA1_2_UUID=numa1_2, NUMA2_1_UUID=numa2_1,
                NUMA2_2_UUID=numa2_2, PF1_1_UUID=pf1_1, PF1_2_UUID=pf1_2,
                PF2_1_UUID=pf2_1, PF2_2_UUID=pf2_2)
        for cn in (cn1, cn2):
            w.inventory(cn, "VCPU", 24, allocation_ratio=16.0)
            w.inventory(cn, "MEMORY_MB", 128 * 1024, allocation_ratio=1.5)
        w.traits(cn1, "HW_CPU_X86_SSE", "HW_CPU_X86_SSE2")
        w.inventory(cn2, "DISK_GB", 2000, reserved=100, allocation_ratio=1.0)
        for shared in (ss, ss2):
            w.inventory(shared, "DISK_GB", 2000, reserved=100, allocation_ratio=1.0)
            w.traits(shared, "MISC_SHARES_VIA_AGGREGATE")
        for pf in (pf1_1, pf1_2, pf2_1, pf2_2):
            w.inventory(pf, "SRIOV_NET_VF", 8, allocation_ratio=1.0)


class NUMAAggregateFixture(APIFixture):
    """Two resourceless compute nodes with NUMA children and sharing disks."""

    def make_entities(self) -> None:
        w = self.world
        agg_a, agg_b, agg_c = _new_uuid(), _new_uuid(), _new_uuid()
        cn1 = w.provider("cn1", agg_a)
        cn2 = w.provider("cn2", agg_a, agg_b)
        ss1 = w.provider("ss1", agg_a)
        ss2 = w.provider("ss2", agg_c)
        numa1_1 = w.provider("numa1_1", agg_c, parent=cn1)
        numa1_2 = w.provider("numa1_2", parent=cn1)
        numa2_1 = w.provider("numa2_1", parent=cn2)
        numa2_2 = w.provider("numa2_2", parent=cn2)
        _export(AGGA_UUID=agg_a, AGGB_UUID=agg_b, AGGC_UUID=agg_c, CN1_UUID=cn1,
                CN2_UUID=cn2, SS1_UUID=ss1, SS2_UUID=ss2, NUMA1_1_UUID=numa1_1,
                NUMA1_2_UUID=numa1_2, NUMA2_1_UUID=numa2_1, NUMA2_2_UUID=numa2_2)
        for numa in (numa1_1, numa1_2, numa2_1, numa2_2):
            w.inventory(numa, "VCPU", 24, allocation_ratio=16.0)
        for ss in (ss1, ss2):
            w.inventory(ss, "DISK_GB", 2000, reserved=100, allocation_ratio=1.0)
            w.traits(ss, "MISC_SHARES_VIA_AGGREGATE")


class NUMANetworkFixture(APIFixture):
    """Compute hosts with NUMA nodes, devices, network agents and NICs."""

    cn1: str | None = None
    cn2: str | None = None

    def make_entities(self) -> None:
        w = self.world
        agg_a = _new_uuid()
        os.environ["AGGA_UUID"] = agg_a
        ss1 = w.provider("ss1", agg_a)
        w.traits(ss1, "MISC_SHARES_VIA_AGGREGATE")
        w.inventory(ss1, "DISK_GB", 2000)
        os.environ["SS1_UUID"] = ss1
        cn1 = self.cn1 or w.provider("cn1", agg_a)
        w.aggregates(cn1, agg_a)
        w.traits(cn1, "COMPUTE_VOLUME_MULTI_ATTACH")
        os.environ["CN1_UUID"] = cn1
        numas = []
        for i in (0, 1):
            numa = w.provider(f"numa{i}", parent=cn1)
            w.traits(numa, "HW_NUMA_ROOT", *(["CUSTOM_FOO"] if i == 1 else []))
            w.inventory(numa, "VCPU", 4)
            numas.append(numa)
            os.environ[f"NUMA{i}_UUID"] = numa
        w.inventory(numas[0], "MEMORY_MB", 2048, min_unit=512, step_size=256)
        w.inventory(numas[1], "MEMORY_MB", 2048, min_unit=256, max_unit=1024)
        user, project = "numafx-user", "numafx-project"
        w.allocate(numas[0], _new_uuid(), {"VCPU": 2}, project=project, user=user)
        fpga = w.provider("fpga0", parent=numas[0])
        w.inventory(fpga, "FPGA", 1)
        os.environ["FPGA0_UUID"] = fpga
        pgpu = w.provider("pgpu0", parent=numas[0])
        w.inventory(pgpu, "VGPU", 8)
        os.environ["PGPU0_UUID"] = pgpu
        for i in (0, 1):
            fpga = w.provider(f"fpga1_{i}", parent=numas[1])
            w.inventory(fpga, "FPGA", 1)
            os.environ[f"FPGA1_{i}_UUID"] = fpga
        agent = w.provider("sriov_agent", parent=cn1)
        w.traits(agent, "CUSTOM_VNIC_TYPE_DIRECT")
        os.environ["SRIOV_AGENT_UUID"] = agent
        for i in (1, 2):
            dev = w.provider(f"esn{i}", parent=agent)
            w.traits(dev, f"CUSTOM_PHYSNET{i}")
            w.inventory(dev, "NET_BW_EGR_KILOBIT_PER_SEC", 10000 * i)
            os.environ[f"ESN{i}_UUID"] = dev
        agent = w.provider("ovs_agent", parent=cn1)
        w.traits(agent, "CUSTOM_VNIC_TYPE_NORMAL")
        os.environ["OVS_AGENT_UUID"] = agent
        dev = w.provider("br_int", parent=agent)
        w.traits(dev, "CUSTOM_PHYSNET0")
        w.inventory(dev, "NET_BW_EGR_KILOBIT_PER_SEC", 1000)
        os.environ["BR_INT_UUID"] = dev
        cn2 = self.cn2 or w.provider("cn2")
        w.aggregates(cn2, agg_a)
        w.inventory(cn2, "VCPU", 8)
        w.allocate(cn2, _new_uuid(), {"VCPU": 3}, project=project, user=user)
        w.inventory(cn2, "MEMORY_MB", 2048, min_unit=1024, step_size=128)
        w.inventory(cn2, "DISK_GB", 1000)
        w.traits(cn2, "CUSTOM_FOO")
        os.environ["CN2_UUID"] = cn2
        nics = []
        for i in (1, 2, 3):
            nic = w.provider(f"nic{i}", parent=cn2)
            w.traits(nic, "CUSTOM_HW_NIC_ROOT")
            nics.append(nic)
            os.environ[f"NIC{i}_UUID"] = nic
        for i in (1, 2):
            pf = w.provider(f"pf1_{i}", parent=nics[0])
            w.traits(pf, f"CUSTOM_PHYSNET{i}")
            w.inventory(pf, "CUSTOM_VF", 4)
            os.environ[f"PF1_{i}_UUID"] = pf
        for i in (0, 1, 2, 3):
            pf = w.provider(f"pf2_{i + 1}", parent=nics[1])
            w.traits(pf, f"CUSTOM_PHYSNET{(i % 2) + 1}")
            w.inventory(pf, "CUSTOM_VF", 2)
            os.environ[f"PF2_{i + 1}_UUID"] = pf
        pf = w.provider("pf3_1", parent=nics[2])
        w.traits(pf, "CUSTOM_PHYSNET1")
        w.inventory(pf, "CUSTOM_VF", 8)
        os.environ["PF3_1_UUID"] = pf


class DeepNUMANetworkFixture(NUMANetworkFixture):
    """NUMANetworkFixture with a parent and a grandparent above each host."""

    def make_entities(self) -> None:
        w = self.world
        gp1 = w.provider("gp1")
        p1 = w.provider("p1", parent=gp1)
        p2 = w.provider("p2", parent=gp1)
        self.cn1 = w.provider("cn1", parent=p1)
        self.cn2 = w.provider("cn2", parent=p2)
        super().make_entities()


class NonSharedStorageFixture(APIFixture):
    """Three compute nodes with local disk, three aggregates named."""

    def make_entities(self) -> None:
        w = self.world
        _export(AGGA_UUID=_new_uuid(), AGGB_UUID=_new_uuid(), AGGC_UUID=_new_uuid())
        cns = [w.provider(f"cn{i}") for i in (1, 2, 3)]
        _export(CN1_UUID=cns[0], CN2_UUID=cns[1], CN3_UUID=cns[2])
        for cn in cns:
            w.inventory(cn, "VCPU", 24)
            w.inventory(cn, "MEMORY_MB", 128 * 1024)
            w.inventory(cn, "DISK_GB", 2000)


class CORSFixture(APIFixture):
    """CORS for http://valid.example.com."""

    def make_entities(self) -> None:
        self.conf.set_override("allowed_origin", ["http://valid.example.com"], "cors")
        self.conf.set_override("allow_headers", ["openstack-api-version"], "cors")
        _CURRENT["app"] = api_app.make_app(self.conf, self.backend)


class GranularFixture(APIFixture):
    """Three compute nodes and three sharing providers in aggregates A, B, C."""

    def make_entities(self) -> None:
        w = self.world
        self.backend.ensure_resource_class("CUSTOM_NET_MBPS")
        agg_a, agg_b, agg_c = _new_uuid(), _new_uuid(), _new_uuid()
        _export(AGGA=agg_a, AGGB=agg_b, AGGC=agg_c)
        left = w.provider("cn_left", agg_a)
        os.environ["CN_LEFT"] = left
        for rc, total in (("VCPU", 8), ("MEMORY_MB", 4096), ("DISK_GB", 500), ("VGPU", 8),
                          ("SRIOV_NET_VF", 8), ("CUSTOM_NET_MBPS", 4000)):
            w.inventory(left, rc, total)
        w.traits(left, "HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_GPU_API_DXVA",
                 "HW_NIC_DCB_PFC", "CUSTOM_FOO")
        middle = w.provider("cn_middle", agg_a, agg_b)
        os.environ["CN_MIDDLE"] = middle
        for rc, total in (("VCPU", 8), ("MEMORY_MB", 4096), ("SRIOV_NET_VF", 8),
                          ("CUSTOM_NET_MBPS", 4000)):
            w.inventory(middle, rc, total)
        w.traits(middle, "HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_CPU_X86_SSE",
                 "HW_NIC_ACCEL_TLS")
        right = w.provider("cn_right", agg_b, agg_c)
        os.environ["CN_RIGHT"] = right
        w.inventory(right, "VCPU", 8)
        w.inventory(right, "MEMORY_MB", 4096)
        w.inventory(right, "DISK_GB", 500)
        w.inventory(right, "VGPU", 8, max_unit=2)
        w.traits(right, "HW_CPU_X86_MMX", "HW_GPU_API_DXVA", "CUSTOM_DISK_SSD")
        disk1 = w.provider("shr_disk_1", agg_a)
        os.environ["SHR_DISK_1"] = disk1
        w.inventory(disk1, "DISK_GB", 1000)
        w.traits(disk1, "MISC_SHARES_VIA_AGGREGATE", "CUSTOM_DISK_SSD")
        disk2 = w.provider("shr_disk_2", agg_a, agg_b)
        os.environ["SHR_DISK_2"] = disk2
        w.inventory(disk2, "DISK_GB", 1000)
        w.traits(disk2, "MISC_SHARES_VIA_AGGREGATE")
        net = w.provider("shr_net", agg_c)
        os.environ["SHR_NET"] = net
        w.inventory(net, "SRIOV_NET_VF", 16)
        w.inventory(net, "CUSTOM_NET_MBPS", 40000)
        w.traits(net, "MISC_SHARES_VIA_AGGREGATE")


class NeutronQoSMultiSegmentFixture(APIFixture):
    """Four compute trees with OVS and SR-IOV agents on segment physnets."""

    def make_entities(self) -> None:
        w = self.world
        direct = ("CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL",
                  "CUSTOM_VNIC_TYPE_MACVTAP")
        physnets = {0: "CUSTOM_PHYSNET_OTHER", 1: "CUSTOM_PHYSNET_MSN_S1",
                    2: "CUSTOM_PHYSNET_MSN_S2"}
        for i in (0, 1, 2, 3):
            name = f"compute{i}"
            cn = w.provider(name)
            os.environ[name] = cn
            w.inventory(cn, "VCPU", 8)
            w.inventory(cn, "MEMORY_MB", 4096)
            w.inventory(cn, "DISK_GB", 500)
            ovs = w.provider(f"{name}:Open vSwitch agent", parent=cn)
            os.environ[f"{name}:ovs_agent"] = ovs
            w.inventory(ovs, "NET_PACKET_RATE_KILOPACKET_PER_SEC", 1000)
            w.traits(ovs, "CUSTOM_VNIC_TYPE_NORMAL")
            bw = 1000 if i == 3 else 5000
            br_ex = w.provider(f"{name}:Open vSwitch agent:br-ex", parent=ovs)
            os.environ[f"{name}:br_ex"] = br_ex
            w.inventory(br_ex, "NET_BW_EGR_KILOBIT_PER_SEC", bw)
            w.inventory(br_ex, "NET_BW_IGR_KILOBIT_PER_SEC", bw)
            w.traits(br_ex, "CUSTOM_VNIC_TYPE_NORMAL", physnets[1 if i == 3 else i])
            if i == 3:
                br_ex2 = w.provider(f"{name}:Open vSwitch agent:br-ex2", parent=ovs)
                os.environ[f"{name}:br_ex2"] = br_ex2
                w.inventory(br_ex2, "NET_BW_EGR_KILOBIT_PER_SEC", 1000)
                w.inventory(br_ex2, "NET_BW_IGR_KILOBIT_PER_SEC", 1000)
                w.traits(br_ex2, "CUSTOM_VNIC_TYPE_NORMAL", physnets[2])
            sriov = w.provider(f"{name}:NIC Switch agent", parent=cn)
            if i != 3:
                # Placement's fixture exports compute2's agent under compute3's name.
                os.environ[f"{name}:sriov_agent"] = sriov
            else:
                os.environ[f"{name}:sriov_agent"] = os.environ["compute2:sriov_agent"]
            w.traits(sriov, *direct)
            bw = 1000 if i == 3 else 10000
            pf0 = w.provider(f"{name}:NIC Switch agent:enp129s0f0", parent=sriov)
            os.environ[f"{name}:pf0"] = pf0
            w.inventory(pf0, "NET_BW_EGR_KILOBIT_PER_SEC", bw)
            w.inventory(pf0, "NET_BW_IGR_KILOBIT_PER_SEC", bw)
            w.traits(pf0, *direct, physnets[1 if i == 3 else i])
            if i == 3:
                pf1 = w.provider(f"{name}:NIC Switch agent:enp129s0f1", parent=sriov)
                os.environ[f"{name}:pf1"] = pf1
                w.inventory(pf1, "NET_BW_EGR_KILOBIT_PER_SEC", 1000)
                w.inventory(pf1, "NET_BW_IGR_KILOBIT_PER_SEC", 1000)
                w.traits(pf1, *direct, physnets[2])


def _export(**values: str) -> None:
    os.environ.update(values)
