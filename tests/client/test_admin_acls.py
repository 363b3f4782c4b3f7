"""ACLs on the embedded server started with ``-c authorizer.enabled=true -c super.users=User:admin``:
rules created, listed and dropped through ``FlussAdmin``, and enforced for SASL principals (and the
plaintext listener's anonymous user) with the Java authorizer's code 48."""
from __future__ import annotations

import pyarrow as pa
import pytest

import fluss_fast as fluss
from fluss_fast import ErrorCode, FlussError
from fluss_fast.client.admin_types import AclBinding, AclFilter, OperationType, ResourceType

FIELDS = [pa.field("id", pa.int32()), pa.field("name", pa.string())]
LATEST = fluss.OffsetSpec.latest()
ACL_ARGS = ["-c", "authorizer.enabled=true", "-c", "super.users=User:admin"]


async def _connect(srv, user=None):
    conf = {"bootstrap.servers": srv.bootstrap_servers}
    if user is not None:
        conf = {"bootstrap.servers": srv.sasl_bootstrap_servers, "security.protocol": "sasl",
                "security.sasl.mechanism": "PLAIN", "security.sasl.username": user,
                "security.sasl.password": {"admin": "admin-secret", "alice": "alice-pw"}[user]}
    return await fluss.FlussConnection.create(fluss.Config(conf))


async def _code(aw) -> int:
    with pytest.raises(FlussError) as info:
        await aw
    return info.value.error_code


async def test_acls_are_kept_and_enforced(start_server):
    srv = start_server(extra_args=ACL_ARGS)
    admin_conn = await _connect(srv, "admin")
    alice_conn = await _connect(srv, "alice")
    anon_conn = await _connect(srv)
    try:
        admin, alice = admin_conn.get_admin(), alice_conn.get_admin()
        path = fluss.TablePath("shop", "orders")
        await admin.create_database("shop")
        await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(pa.schema(FIELDS)), bucket_count=1))
        t = await admin_conn.get_table(path)
        w = t.new_append().create_writer()
        w.append({"id": 1, "name": "a"})
        await w.flush()

        # alice has no rule yet: DDL and writes are refused with 48
        assert await _code(alice.create_database("mine")) == ErrorCode.AUTHORIZATION_EXCEPTION
        assert await _code(alice.drop_table(path)) == ErrorCode.AUTHORIZATION_EXCEPTION
        assert await _code(alice.list_offsets(path, [0], LATEST)) == ErrorCode.AUTHORIZATION_EXCEPTION
        assert await admin.list_acls() == []
        assert await alice.list_acls() == []
        # what she may not DESCRIBE she does not see listed
        assert "shop" in await admin.list_databases()
        assert await alice.list_databases() == []
        # nor may she grant herself anything
        grant = AclBinding(ResourceType.TABLE, "shop.orders", "alice", OperationType.READ)
        assert await _code(alice.create_acls([grant])) == ErrorCode.AUTHORIZATION_EXCEPTION

        await admin.create_acls([grant])
        assert await admin.list_acls() == [grant]
        assert await alice.list_acls(AclFilter(principal_name="alice")) == [grant]
        assert await alice.list_tables("shop") == ["orders"]
        assert await alice.list_databases() == []
        # READ on the table implies DESCRIBE: list_offsets works, and so does a scan
        assert await alice.list_offsets(path, [0], fluss.OffsetSpec.latest()) == {0: 1}
        at = await alice_conn.get_table(path)
        bs = await at.new_scan().create_record_batch_log_scanner()
        bs.subscribe(0, fluss.EARLIEST_OFFSET)
        assert (await bs.to_arrow()).to_pylist() == [{"id": 1, "name": "a"}]
        # but not a write
        aw = at.new_append().create_writer()
        aw.append({"id": 2, "name": "b"})
        assert await _code(aw.flush()) == ErrorCode.AUTHORIZATION_EXCEPTION
        # a database-wide rule covers its tables
        await admin.create_acls([AclBinding(ResourceType.DATABASE, "shop", "alice", OperationType.ALL)])
        aw2 = (await alice_conn.get_table(path)).new_append().create_writer()
        aw2.append({"id": 3, "name": "c"})
        await aw2.flush()
        await alice.create_table(fluss.TablePath("shop", "hers"),
                                 fluss.TableDescriptor(fluss.Schema(pa.schema(FIELDS))))
        assert await _code(alice.create_database("mine")) == ErrorCode.AUTHORIZATION_EXCEPTION
        assert await alice.list_databases() == ["shop"]
        assert [s.database_name for s in await alice.list_database_summaries()] == ["shop"]
        assert sorted(await alice.list_tables("shop")) == ["hers", "orders"]

        # the plaintext listener's anonymous user has nothing
        anon = anon_conn.get_admin()
        assert await _code(anon.drop_table(path)) == ErrorCode.AUTHORIZATION_EXCEPTION

        dropped = await admin.drop_acls([AclFilter(principal_name="alice")])
        assert len(dropped) == 2
        assert await admin.list_acls() == []
        assert await _code(alice.list_offsets(path, [0], LATEST)) == ErrorCode.AUTHORIZATION_EXCEPTION
    finally:
        for c in (admin_conn, alice_conn, anon_conn):
            await c.close()


async def test_rules_survive_a_restart(start_server):
    srv = start_server(extra_args=ACL_ARGS)
    conn = await _connect(srv, "admin")
    rule = AclBinding(ResourceType.CLUSTER, "fluss-cluster", "alice", OperationType.CREATE)
    try:
        await conn.get_admin().create_acls([rule])
    finally:
        await conn.close()
    srv.restart()
    conn = await _connect(srv, "alice")
    try:
        assert await conn.get_admin().list_acls() == [rule]
        await conn.get_admin().create_database("alices")
    finally:
        await conn.close()


async def test_without_the_authorizer_acl_calls_say_security_is_disabled(fluss_server):
    if getattr(fluss_server, "kind", "embedded") == "java":
        pytest.skip("the embedded server's default")
    conn = await _connect(fluss_server)
    try:
        assert await _code(conn.get_admin().list_acls()) == ErrorCode.SECURITY_DISABLED_EXCEPTION
    finally:
        await conn.close()
