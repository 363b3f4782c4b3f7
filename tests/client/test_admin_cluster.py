"""FlussAdmin's cluster methods (``client/admin_cluster.py``) against the embedded server: what it
implements answers, what it does not answers at once with UNSUPPORTED_VERSION (never silence)."""
from __future__ import annotations

import asyncio

import pytest

import fluss_fast as fluss
from fluss_fast import ErrorCode, FlussError
from fluss_fast.client.admin_types import (
    AclBinding,
    AclFilter,
    AlterConfig,
    ClusterHealthStatus,
    GoalType,
    OperationType,
    ResourceType,
    ServerTag,
)


@pytest.fixture(autouse=True)
def _embedded_only(fluss_server):
    # what Java answers to the same calls is tests/client/test_admin_java_cluster.py
    if getattr(fluss_server, "kind", "embedded") == "java":
        pytest.skip("embedded server only: its own answers (test_admin_java_cluster.py covers Java)")


@pytest.fixture
async def admin(fluss_server):
    c = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": fluss_server.bootstrap_servers}))
    yield c.get_admin()
    await c.close()


async def _code(aw) -> int:
    with pytest.raises(FlussError) as info:
        await aw
    return info.value.error_code


async def test_cluster_configs_and_health(admin):
    configs = {c.key: c for c in await admin.describe_cluster_configs()}
    assert configs["default.bucket.number"].source == "DEFAULT"
    assert configs["default.bucket.number"].value.isdigit()
    health = await admin.get_cluster_health()
    assert health.status == ClusterHealthStatus.GREEN
    assert health.in_sync_replicas == health.num_replicas
    assert health.active_leader_replicas == health.num_leader_replicas


async def test_acls_without_an_authorizer(admin):
    binding = AclBinding(ResourceType.TABLE, "db.t", "alice", OperationType.READ)
    assert await _code(admin.list_acls()) == ErrorCode.SECURITY_DISABLED_EXCEPTION
    assert await _code(admin.create_acls([binding])) == ErrorCode.SECURITY_DISABLED_EXCEPTION
    assert await _code(admin.drop_acls([AclFilter(principal_name="alice")])) == ErrorCode.SECURITY_DISABLED_EXCEPTION
    with pytest.raises(TypeError):
        await admin.create_acls(["alice"])


async def test_unimplemented_cluster_apis_answer_unsupported_at_once(admin):
    calls = [
        admin.alter_cluster_configs([AlterConfig("log.retention", "1d")]),
        admin.add_server_tag([0], ServerTag.TEMPORARY_OFFLINE),
        admin.remove_server_tag([0], ServerTag.TEMPORARY_OFFLINE),
        admin.rebalance([GoalType.REPLICA_DISTRIBUTION]),
        admin.list_rebalance_progress(),
        admin.cancel_rebalance(),
        admin.register_producer_offsets("p1", {fluss.TableBucket(1, 0): 5}),
        admin.get_producer_offsets("p1"),
        admin.delete_producer_offsets("p1"),
    ]
    for aw in calls:
        with pytest.raises(FlussError) as err:
            await asyncio.wait_for(aw, 10)
        assert err.value.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert "not supported" in err.value.message


async def test_argument_checks(admin):
    with pytest.raises(FlussError) as err:
        await admin.alter_cluster_configs([AlterConfig("k", "v", op="merge")])
    assert err.value.error_code == -2
    with pytest.raises(ValueError):
        await admin.add_server_tag([0], 7)
    with pytest.raises(TypeError):
        await admin.register_producer_offsets("p", [(1, 2)])
