"""API keys, their version ranges, which server role serves them, and their protobuf messages.

One table (docs/contributing/protocol.md §2) drives both sides: the client negotiates versions from it and the server
answers ApiVersions from it and dispatches by it.
"""
from __future__ import annotations

from typing import NamedTuple

COORDINATOR = 1
TABLET_SERVER = 2


class ApiKey(NamedTuple):
    id: int
    name: str
    min_version: int
    max_version: int
    coordinator: bool
    tablet: bool
    public: bool
    message: str  # protobuf message stem: <message>Request / <message>Response


_C, _T, _CT = (True, False), (False, True), (True, True)

_TABLE = [
    (1000, "API_VERSIONS", 0, 0, _CT, True, "ApiVersions"),
    (1001, "CREATE_DATABASE", 0, 0, _C, True, "CreateDatabase"),
    (1002, "DROP_DATABASE", 0, 0, _C, True, "DropDatabase"),
    (1003, "LIST_DATABASES", 0, 0, _CT, True, "ListDatabases"),
    (1004, "DATABASE_EXISTS", 0, 0, _CT, True, "DatabaseExists"),
    (1005, "CREATE_TABLE", 0, 0, _C, True, "CreateTable"),
    (1006, "DROP_TABLE", 0, 0, _C, True, "DropTable"),
    (1007, "GET_TABLE_INFO", 0, 0, _CT, True, "GetTableInfo"),
    (1008, "LIST_TABLES", 0, 0, _CT, True, "ListTables"),
    (1009, "LIST_PARTITION_INFOS", 0, 0, _CT, True, "ListPartitionInfos"),
    (1010, "TABLE_EXISTS", 0, 0, _CT, True, "TableExists"),
    (1011, "GET_TABLE_SCHEMA", 0, 0, _CT, True, "GetTableSchema"),
    (1012, "GET_METADATA", 0, 0, _CT, True, "Metadata"),
    (1013, "UPDATE_METADATA", 0, 0, _T, False, "UpdateMetadata"),
    (1014, "PRODUCE_LOG", 0, 0, _T, True, "ProduceLog"),
    (1015, "FETCH_LOG", 0, 0, _T, True, "FetchLog"),
    (1016, "PUT_KV", 0, 2, _T, True, "PutKv"),
    (1017, "LOOKUP", 0, 1, _T, True, "Lookup"),
    (1018, "NOTIFY_LEADER_AND_ISR", 0, 0, _T, False, "NotifyLeaderAndIsr"),
    (1019, "STOP_REPLICA", 0, 0, _T, False, "StopReplica"),
    (1020, "ADJUST_ISR", 0, 0, _C, False, "AdjustIsr"),
    (1021, "LIST_OFFSETS", 0, 0, _T, True, "ListOffsets"),
    (1022, "COMMIT_KV_SNAPSHOT", 0, 0, _C, False, "CommitKvSnapshot"),
    (1023, "GET_LATEST_KV_SNAPSHOTS", 0, 0, _CT, True, "GetLatestKvSnapshots"),
    (1024, "GET_KV_SNAPSHOT_METADATA", 0, 0, _CT, True, "GetKvSnapshotMetadata"),
    (1025, "GET_FILESYSTEM_SECURITY_TOKEN", 0, 0, _CT, True, "GetFileSystemSecurityToken"),
    (1026, "INIT_WRITER", 0, 0, _T, True, "InitWriter"),
    (1027, "COMMIT_REMOTE_LOG_MANIFEST", 0, 0, _C, False, "CommitRemoteLogManifest"),
    (1028, "NOTIFY_REMOTE_LOG_OFFSETS", 0, 0, _T, False, "NotifyRemoteLogOffsets"),
    (1029, "NOTIFY_KV_SNAPSHOT_OFFSET", 0, 0, _T, False, "NotifyKvSnapshotOffset"),
    (1030, "COMMIT_LAKE_TABLE_SNAPSHOT", 0, 0, _C, False, "CommitLakeTableSnapshot"),
    (1031, "NOTIFY_LAKE_TABLE_OFFSET", 0, 0, _T, False, "NotifyLakeTableOffset"),
    (1032, "GET_LAKE_SNAPSHOT", 0, 0, _CT, True, "GetLakeSnapshot"),
    (1033, "LIMIT_SCAN", 0, 0, _T, True, "LimitScan"),
    (1034, "PREFIX_LOOKUP", 0, 1, _T, True, "PrefixLookup"),
    (1035, "GET_DATABASE_INFO", 0, 0, _CT, True, "GetDatabaseInfo"),
    (1036, "CREATE_PARTITION", 0, 0, _C, True, "CreatePartition"),
    (1037, "DROP_PARTITION", 0, 0, _C, True, "DropPartition"),
    (1038, "AUTHENTICATE", 0, 0, _CT, True, "Authenticate"),
    (1039, "CREATE_ACLS", 0, 0, _C, True, "CreateAcls"),
    (1040, "LIST_ACLS", 0, 0, _CT, True, "ListAcls"),
    (1041, "DROP_ACLS", 0, 0, _C, True, "DropAcls"),
    (1042, "LAKE_TIERING_HEARTBEAT", 0, 0, _C, False, "LakeTieringHeartbeat"),
    (1043, "CONTROLLED_SHUTDOWN", 0, 0, _C, False, "ControlledShutdown"),
    (1044, "ALTER_TABLE", 0, 0, _C, True, "AlterTable"),
    (1045, "DESCRIBE_CLUSTER_CONFIGS", 0, 0, _CT, True, "DescribeClusterConfigs"),
    (1046, "ALTER_CLUSTER_CONFIGS", 0, 0, _C, True, "AlterClusterConfigs"),
    (1047, "ADD_SERVER_TAG", 0, 0, _C, True, "AddServerTag"),
    (1048, "REMOVE_SERVER_TAG", 0, 0, _C, True, "RemoveServerTag"),
    (1049, "REBALANCE", 0, 0, _C, True, "Rebalance"),
    (1050, "LIST_REBALANCE_PROGRESS", 0, 0, _C, True, "ListRebalanceProgress"),
    (1051, "CANCEL_REBALANCE", 0, 0, _C, True, "CancelRebalance"),
    (1052, "PREPARE_LAKE_TABLE_SNAPSHOT", 0, 0, _C, False, "PrepareLakeTableSnapshot"),
    (1053, "REGISTER_PRODUCER_OFFSETS", 0, 0, _C, True, "RegisterProducerOffsets"),
    (1054, "GET_PRODUCER_OFFSETS", 0, 0, _C, True, "GetProducerOffsets"),
    (1055, "DELETE_PRODUCER_OFFSETS", 0, 0, _C, True, "DeleteProducerOffsets"),
    (1056, "ACQUIRE_KV_SNAPSHOT_LEASE", 0, 0, _C, True, "AcquireKvSnapshotLease"),
    (1057, "RELEASE_KV_SNAPSHOT_LEASE", 0, 0, _C, True, "ReleaseKvSnapshotLease"),
    (1058, "DROP_KV_SNAPSHOT_LEASE", 0, 0, _C, True, "DropKvSnapshotLease"),
    (1059, "GET_TABLE_STATS", 0, 0, _T, True, "GetTableStats"),
    (1060, "ALTER_DATABASE", 0, 0, _C, True, "AlterDatabase"),
    (1061, "SCAN_KV", 0, 0, _T, True, "ScanKv"),
    (1062, "GET_CLUSTER_HEALTH", 0, 0, _CT, True, "GetClusterHealth"),
    (1063, "LIST_REMOTE_LOG_MANIFESTS", 0, 0, _C, True, "ListRemoteLogManifests"),
    (1064, "LIST_KV_SNAPSHOTS", 0, 0, _C, True, "ListKvSnapshots"),
]

API_KEYS: dict[int, ApiKey] = {
    row[0]: ApiKey(row[0], row[1], row[2], row[3], row[4][0], row[4][1], row[5], row[6]) for row in _TABLE
}


class Api:
    """``Api.PRODUCE_LOG == 1014`` and so on.

    Written out (not filled in from ``_TABLE``) so that IDEs and type checkers see the names;
    tests/rpc/test_generated_tables.py keeps them equal to the table.
    """

    API_VERSIONS = 1000
    CREATE_DATABASE = 1001
    DROP_DATABASE = 1002
    LIST_DATABASES = 1003
    DATABASE_EXISTS = 1004
    CREATE_TABLE = 1005
    DROP_TABLE = 1006
    GET_TABLE_INFO = 1007
    LIST_TABLES = 1008
    LIST_PARTITION_INFOS = 1009
    TABLE_EXISTS = 1010
    GET_TABLE_SCHEMA = 1011
    GET_METADATA = 1012
    UPDATE_METADATA = 1013
    PRODUCE_LOG = 1014
    FETCH_LOG = 1015
    PUT_KV = 1016
    LOOKUP = 1017
    NOTIFY_LEADER_AND_ISR = 1018
    STOP_REPLICA = 1019
    ADJUST_ISR = 1020
    LIST_OFFSETS = 1021
    COMMIT_KV_SNAPSHOT = 1022
    GET_LATEST_KV_SNAPSHOTS = 1023
    GET_KV_SNAPSHOT_METADATA = 1024
    GET_FILESYSTEM_SECURITY_TOKEN = 1025
    INIT_WRITER = 1026
    COMMIT_REMOTE_LOG_MANIFEST = 1027
    NOTIFY_REMOTE_LOG_OFFSETS = 1028
    NOTIFY_KV_SNAPSHOT_OFFSET = 1029
    COMMIT_LAKE_TABLE_SNAPSHOT = 1030
    NOTIFY_LAKE_TABLE_OFFSET = 1031
    GET_LAKE_SNAPSHOT = 1032
    LIMIT_SCAN = 1033
    PREFIX_LOOKUP = 1034
    GET_DATABASE_INFO = 1035
    CREATE_PARTITION = 1036
    DROP_PARTITION = 1037
    AUTHENTICATE = 1038
    CREATE_ACLS = 1039
    LIST_ACLS = 1040
    DROP_ACLS = 1041
    LAKE_TIERING_HEARTBEAT = 1042
    CONTROLLED_SHUTDOWN = 1043
    ALTER_TABLE = 1044
    DESCRIBE_CLUSTER_CONFIGS = 1045
    ALTER_CLUSTER_CONFIGS = 1046
    ADD_SERVER_TAG = 1047
    REMOVE_SERVER_TAG = 1048
    REBALANCE = 1049
    LIST_REBALANCE_PROGRESS = 1050
    CANCEL_REBALANCE = 1051
    PREPARE_LAKE_TABLE_SNAPSHOT = 1052
    REGISTER_PRODUCER_OFFSETS = 1053
    GET_PRODUCER_OFFSETS = 1054
    DELETE_PRODUCER_OFFSETS = 1055
    ACQUIRE_KV_SNAPSHOT_LEASE = 1056
    RELEASE_KV_SNAPSHOT_LEASE = 1057
    DROP_KV_SNAPSHOT_LEASE = 1058
    GET_TABLE_STATS = 1059
    ALTER_DATABASE = 1060
    SCAN_KV = 1061
    GET_CLUSTER_HEALTH = 1062
    LIST_REMOTE_LOG_MANIFESTS = 1063
    LIST_KV_SNAPSHOTS = 1064


def request_class(api_key: int):
    from . import fluss_api_pb2 as pb

    return getattr(pb, API_KEYS[api_key].message + "Request")


def response_class(api_key: int):
    from . import fluss_api_pb2 as pb

    return getattr(pb, API_KEYS[api_key].message + "Response")


# Versions this client speaks (its own maximum per key); the handshake picks min(ours, theirs).
CLIENT_MAX_VERSIONS = {k.id: k.max_version for k in API_KEYS.values()}
