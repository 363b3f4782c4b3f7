"""``FlussAdmin``'s cluster methods beyond pyfluss 1.0.0's set: the Java ``Admin``'s ACLs, cluster
configs, server tags, rebalancing, producer offsets and cluster health, in pyfluss's style.

Every request goes through the connection's ApiVersions check: a server without the API fails at
once with ``UNSUPPORTED_VERSION`` naming it; the embedded server offers these APIs but answers the
ones it does not implement (tags, rebalance, producer offsets, altering configs) with the same code.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..metadata._args import want_instance as _check
from ..metadata._args import want_int as _want_int
from ..metadata._args import want_str as _want_str
from ..metadata.table import TableBucket
from ..rpc import fluss_api_pb2 as pb
from ..rpc.api import Api
from .admin_schema import _changes
from .admin_types import (
    _FINAL,
    AclBinding,
    AclFilter,
    AlterConfig,
    ClusterHealth,
    ClusterHealthStatus,
    ConfigEntry,
    GoalType,
    ProducerOffsets,
    RebalancePlanForBucket,
    RebalanceProgress,
    RebalanceStatus,
    RegisterResult,
    ServerTag,
    _enum,
)
from .runtime import on_runtime


def _ids(arg: str, values) -> list[int]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"argument '{arg}': expected a list of integers, got '{type(values).__name__}'")
    return [_want_int(arg, v) for v in values]


def _bucket_offsets(table_id: int, pb_table) -> dict[TableBucket, int]:
    out = {}
    for b in pb_table.bucket_offsets:
        pid = b.partition_id if b.HasField("partition_id") else None
        out[TableBucket._make(table_id, pid, b.bucket_id)] = b.log_end_offset
    return out


class AdminClusterMixin:
    """ACL, cluster-config, server-tag, rebalance, producer-offset and health methods of `FlussAdmin`."""

    if TYPE_CHECKING:  # provided by FlussAdmin
        _ctx: Any
        _runtime: Any

        async def _call(self, api_key: int, req: Any, what: str = "") -> Any: ...

    # -- ACLs --------------------------------------------------------------------------------------
    @on_runtime
    async def list_acls(self, acl_filter: AclFilter | None = None) -> list[AclBinding]:
        """The ACLs matching a filter.

        Args:
            acl_filter: Which ACLs; ``None`` (or ``AclFilter()``) for all.

        Returns:
            The matching `AclBinding` values.

        Raises:
            FlussError: ``SECURITY_DISABLED_EXCEPTION`` when the cluster has no authorizer.
        """
        f = AclFilter() if acl_filter is None else _check("acl_filter", acl_filter, AclFilter)
        req = pb.ListAclsRequest()
        f._to_pb(req.acl_filter)
        resp = await self._call(Api.LIST_ACLS, req)
        return [AclBinding._from_pb(a) for a in resp.acl]

    @on_runtime
    async def create_acls(self, acl_bindings: list[AclBinding]) -> None:
        """Add ACL rules (adding one that exists already is no error).

        Args:
            acl_bindings: The rules.

        Raises:
            FlussError: ``SECURITY_DISABLED_EXCEPTION``, ``AUTHORIZATION_EXCEPTION``, or the first
                rule the server refused (its code and message).

        Example:
            ```python
            await admin.create_acls([fluss.AclBinding(fluss.ResourceType.TABLE, "shop.events", "alice",
                                                      fluss.OperationType.READ)])
            ```
        """
        bindings = _changes("acl_bindings", acl_bindings, AclBinding)
        req = pb.CreateAclsRequest()
        for b in bindings:
            b._to_pb(req.acl.add())
        resp = await self._call(Api.CREATE_ACLS, req)
        for r in resp.aclRes:
            if r.HasField("error_code") and r.error_code != 0:
                raise self._error(r.error_code, r.error_message, f"ACL {AclBinding._from_pb(r.acl)}")

    @on_runtime
    async def drop_acls(self, acl_filters: list[AclFilter]) -> list[AclBinding]:
        """Remove the ACL rules matching any of some filters.

        Args:
            acl_filters: The filters.

        Returns:
            The rules removed.

        Raises:
            FlussError: ``SECURITY_DISABLED_EXCEPTION``, or a filter the server could not apply.
        """
        filters = _changes("acl_filters", acl_filters, AclFilter)
        req = pb.DropAclsRequest()
        for f in filters:
            f._to_pb(req.acl_filter.add())
        resp = await self._call(Api.DROP_ACLS, req)
        dropped = []
        for res in resp.filter_results:
            if res.HasField("error_code") and res.error_code != 0:
                raise self._error(res.error_code, res.error_message, "dropping ACLs")
            for m in res.matching_acls:
                if m.HasField("error_code") and m.error_code != 0:
                    raise self._error(m.error_code, m.error_message, f"ACL {AclBinding._from_pb(m.acl)}")
                dropped.append(AclBinding._from_pb(m.acl))
        return dropped

    @staticmethod
    def _error(code: int, message: str, what: str):
        from ..errors import FlussError

        return FlussError(f"{message or f'error {code}'} ({what})", code)

    # -- cluster configs ---------------------------------------------------------------------------
    @on_runtime
    async def describe_cluster_configs(self) -> list[ConfigEntry]:
        """The cluster's configuration as the coordinator sees it.

        Returns:
            One `ConfigEntry` per option (key, value, source).
        """
        resp = await self._call(Api.DESCRIBE_CLUSTER_CONFIGS, pb.DescribeClusterConfigsRequest())
        return [ConfigEntry(c.config_key, c.config_value if c.HasField("config_value") else None, c.config_source)
                for c in resp.configs]

    @on_runtime
    async def alter_cluster_configs(self, configs: list[AlterConfig]) -> None:
        """Change dynamic cluster options.

        Args:
            configs: `AlterConfig` values (key, value, op).

        Raises:
            FlussError: ``INVALID_CONFIG_EXCEPTION`` for an option that cannot change at run time;
                ``UNSUPPORTED_VERSION`` from the embedded server.
        """
        req = pb.AlterClusterConfigsRequest()
        for c in _changes("configs", configs, AlterConfig):
            msg = req.alter_configs.add(config_key=_want_str("key", c.key), op_type=c._op_code())
            if c.value is not None:
                msg.config_value = c.value
        await self._call(Api.ALTER_CLUSTER_CONFIGS, req)

    # -- server tags and rebalancing ---------------------------------------------------------------
    @on_runtime
    async def add_server_tag(self, tablet_servers: list[int], server_tag: ServerTag) -> None:
        """Tag tablet servers (e.g. as going offline) for the next rebalance.

        Args:
            tablet_servers: The server ids.
            server_tag: `ServerTag`.

        Raises:
            FlussError: ``SERVER_NOT_EXIST_EXCEPTION``, ``SEVER_TAG_ALREADY_EXIST_EXCEPTION``, or
                ``UNSUPPORTED_VERSION`` from the embedded server.
        """
        req = pb.AddServerTagRequest(server_tag=int(ServerTag(server_tag)))
        req.server_ids.extend(_ids("tablet_servers", tablet_servers))
        await self._call(Api.ADD_SERVER_TAG, req)

    @on_runtime
    async def remove_server_tag(self, tablet_servers: list[int], server_tag: ServerTag) -> None:
        """Remove a tag from tablet servers.

        Args:
            tablet_servers: The server ids.
            server_tag: `ServerTag`.

        Raises:
            FlussError: ``SEVER_TAG_NOT_EXIST_EXCEPTION``, or ``UNSUPPORTED_VERSION`` from the embedded server.
        """
        req = pb.RemoveServerTagRequest(server_tag=int(ServerTag(server_tag)))
        req.server_ids.extend(_ids("tablet_servers", tablet_servers))
        await self._call(Api.REMOVE_SERVER_TAG, req)

    @on_runtime
    async def rebalance(self, priority_goals: list[GoalType]) -> str:
        """Start moving replicas and leaders to meet some goals.

        Args:
            priority_goals: `GoalType` values, most important first.

        Returns:
            The rebalance id.

        Raises:
            FlussError: ``REBALANCE_FAILURE_EXCEPTION``, or ``UNSUPPORTED_VERSION`` from the embedded server.
        """
        goals = _changes("priority_goals", priority_goals, GoalType)
        req = pb.RebalanceRequest()
        req.goals.extend(int(g) for g in goals)
        resp = await self._call(Api.REBALANCE, req)
        return resp.rebalance_id

    @on_runtime
    async def list_rebalance_progress(self, rebalance_id: str | None = None) -> RebalanceProgress | None:
        """A rebalance's progress.

        Args:
            rebalance_id: The rebalance; ``None`` for the latest.

        Returns:
            Its `RebalanceProgress`, or ``None`` when there is none.

        Raises:
            FlussError: ``UNSUPPORTED_VERSION`` from the embedded server.
        """
        req = pb.ListRebalanceProgressRequest()
        if rebalance_id is not None:
            req.rebalance_id = _want_str("rebalance_id", rebalance_id)
        resp = await self._call(Api.LIST_REBALANCE_PROGRESS, req)
        if not resp.HasField("rebalance_id"):
            return None
        buckets = {}
        done = total = 0
        for t in resp.table_progress:
            for bp in t.buckets_progress:
                p = bp.rebalance_plan
                pid = p.partition_id if p.HasField("partition_id") else None
                tb = TableBucket._make(t.table_id, pid, p.bucket_id)
                plan = RebalancePlanForBucket(tb, p.original_leader if p.HasField("original_leader") else None,
                                              p.new_leader if p.HasField("new_leader") else None,
                                              list(p.original_replicas), list(p.new_replicas))
                status = _enum(RebalanceStatus, bp.rebalance_status)
                buckets[tb] = (plan, status)
                total += 1
                done += status in _FINAL
        progress = done / total if total else -1.0
        return RebalanceProgress(resp.rebalance_id, _enum(RebalanceStatus, resp.rebalance_status), progress, buckets)

    @on_runtime
    async def cancel_rebalance(self, rebalance_id: str | None = None) -> None:
        """Cancel a rebalance.

        Args:
            rebalance_id: The rebalance; ``None`` for the running one.

        Raises:
            FlussError: ``NO_REBALANCE_IN_PROGRESS_EXCEPTION``, or ``UNSUPPORTED_VERSION`` from the
                embedded server.
        """
        req = pb.CancelRebalanceRequest()
        if rebalance_id is not None:
            req.rebalance_id = _want_str("rebalance_id", rebalance_id)
        await self._call(Api.CANCEL_REBALANCE, req)

    # -- producer offsets --------------------------------------------------------------------------
    @on_runtime
    async def register_producer_offsets(self, producer_id: str, offsets: dict[TableBucket, int]) -> RegisterResult:
        """Record a producer's offsets (for exactly-once sinks); a second call keeps the first.

        Args:
            producer_id: The producer.
            offsets: ``{TableBucket: log end offset}``.

        Returns:
            ``RegisterResult.CREATED``, or ``ALREADY_EXISTS`` when the producer had offsets already.

        Raises:
            FlussError: ``INVALID_PRODUCER_ID_EXCEPTION``, or ``UNSUPPORTED_VERSION`` from the embedded server.
        """
        req = pb.RegisterProducerOffsetsRequest(producer_id=_want_str("producer_id", producer_id))
        if not isinstance(offsets, dict):
            raise TypeError(f"argument 'offsets': expected a dict, got '{type(offsets).__name__}'")
        by_table: dict[int, list] = {}
        for tb, off in offsets.items():
            _check("offsets", tb, TableBucket)
            by_table.setdefault(tb.table_id, []).append((tb, _want_int("offsets", off)))
        for table_id, items in by_table.items():
            t = req.table_offsets.add(table_id=table_id)
            for tb, off in items:
                b = t.bucket_offsets.add(bucket_id=tb.bucket_id, log_end_offset=off)
                if tb.partition_id is not None:
                    b.partition_id = tb.partition_id
        resp = await self._call(Api.REGISTER_PRODUCER_OFFSETS, req, f"producer '{producer_id}'")
        return _enum(RegisterResult, resp.result if resp.HasField("result") else 0)

    @on_runtime
    async def get_producer_offsets(self, producer_id: str) -> ProducerOffsets | None:
        """A producer's registered offsets.

        Args:
            producer_id: The producer.

        Returns:
            Its `ProducerOffsets`, or ``None`` when it has none.

        Raises:
            FlussError: ``UNSUPPORTED_VERSION`` from the embedded server.
        """
        req = pb.GetProducerOffsetsRequest(producer_id=_want_str("producer_id", producer_id))
        resp = await self._call(Api.GET_PRODUCER_OFFSETS, req, f"producer '{producer_id}'")
        if not resp.HasField("producer_id"):
            return None
        tables = {t.table_id: _bucket_offsets(t.table_id, t) for t in resp.table_offsets}
        return ProducerOffsets(resp.producer_id, tables, resp.expiration_time)

    @on_runtime
    async def delete_producer_offsets(self, producer_id: str) -> None:
        """Forget a producer's registered offsets.

        Args:
            producer_id: The producer.

        Raises:
            FlussError: ``UNSUPPORTED_VERSION`` from the embedded server.
        """
        req = pb.DeleteProducerOffsetsRequest(producer_id=_want_str("producer_id", producer_id))
        await self._call(Api.DELETE_PRODUCER_OFFSETS, req, f"producer '{producer_id}'")

    # -- health ------------------------------------------------------------------------------------
    @on_runtime
    async def get_cluster_health(self) -> ClusterHealth:
        """Replica and leader counts and the overall status.

        Returns:
            The `ClusterHealth`.

        Raises:
            FlussError: ``UNSUPPORTED_VERSION`` from servers without the API (Java 0.9.1).
        """
        r = await self._call(Api.GET_CLUSTER_HEALTH, pb.GetClusterHealthRequest())
        return ClusterHealth(r.num_replicas, r.in_sync_replicas, r.num_leader_replicas, r.active_leader_replicas,
                             _enum(ClusterHealthStatus, r.status))
