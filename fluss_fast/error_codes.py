"""The Fluss error-code table (docs/contributing/protocol.md §4.2): one definition, used by client and server.

``retriable`` follows the Java exception hierarchy (a subclass of RetriableException), which is what
the clients use to decide on a retry; ``refresh_metadata`` marks InvalidMetadataException subclasses,
after which a client drops its cached leaders before retrying.
"""
from __future__ import annotations

from typing import NamedTuple


class ErrorInfo(NamedTuple):
    code: int
    name: str
    retriable: bool
    refresh_metadata: bool
    message: str


_TABLE = [
    (-1, "UNKNOWN_SERVER_ERROR", False, False, "The server experienced an unexpected error when processing the "
     "request."),
    (0, "NONE", False, False, ""),
    (1, "NETWORK_EXCEPTION", True, True, "The server disconnected before a response was received."),
    (2, "UNSUPPORTED_VERSION", False, False, "The version of API is not supported."),
    (3, "CORRUPT_MESSAGE", True, False, "This message has failed its CRC checksum, exceeds the valid size, has a null "
     "key for a primary key table, or is otherwise corrupt."),
    (4, "DATABASE_NOT_EXIST", False, False, "The database does not exist."),
    (5, "DATABASE_NOT_EMPTY", False, False, "The database is not empty."),
    (6, "DATABASE_ALREADY_EXIST", False, False, "The database already exists."),
    (7, "TABLE_NOT_EXIST", False, False, "The table does not exist."),
    (8, "TABLE_ALREADY_EXIST", False, False, "The table already exists."),
    (9, "SCHEMA_NOT_EXIST", True, False, "The schema does not exist."),
    (10, "LOG_STORAGE_EXCEPTION", True, False, "Exception occur while storage data for log in server."),
    (11, "KV_STORAGE_EXCEPTION", True, False, "Exception occur while storage data for kv in server."),
    (12, "NOT_LEADER_OR_FOLLOWER", True, True, "Not leader or follower."),
    (13, "RECORD_TOO_LARGE_EXCEPTION", False, False, "The record is too large."),
    (14, "CORRUPT_RECORD_EXCEPTION", True, False, "The record is corrupt."),
    (15, "INVALID_TABLE_EXCEPTION", False, False, "The client has attempted to perform an operation on an invalid "
     "table."),
    (16, "INVALID_DATABASE_EXCEPTION", False, False, "The client has attempted to perform an operation on an invalid "
     "database."),
    (17, "INVALID_REPLICATION_FACTOR", False, False, "The replication factor is larger then the number of available "
     "tablet servers."),
    (18, "INVALID_REQUIRED_ACKS", False, False, "Produce request specified an invalid value for required acks."),
    (19, "LOG_OFFSET_OUT_OF_RANGE_EXCEPTION", False, False, "The log offset is out of range."),
    (20, "NON_PRIMARY_KEY_TABLE_EXCEPTION", False, False, "The table is not primary key table."),
    (21, "UNKNOWN_TABLE_OR_BUCKET_EXCEPTION", True, True, "The table or bucket does not exist."),
    (22, "INVALID_UPDATE_VERSION_EXCEPTION", False, False, "The update version is invalid."),
    (23, "INVALID_COORDINATOR_EXCEPTION", False, False, "The coordinator is invalid."),
    (24, "FENCED_LEADER_EPOCH_EXCEPTION", False, False, "The leader epoch is invalid."),
    (25, "REQUEST_TIME_OUT", True, False, "The request time out."),
    (26, "STORAGE_EXCEPTION", True, False, "The general storage exception."),
    (27, "OPERATION_NOT_ATTEMPTED_EXCEPTION", False, False, "The server did not attempt to execute this operation."),
    (28, "NOT_ENOUGH_REPLICAS_AFTER_APPEND_EXCEPTION", True, False, "Records are written to the server already, but to "
     "fewer in-sync replicas than required."),
    (29, "NOT_ENOUGH_REPLICAS_EXCEPTION", True, False, "Messages are rejected since there are fewer in-sync replicas "
     "than required."),
    (30, "SECURITY_TOKEN_EXCEPTION", False, False, "Get file access security token exception."),
    (31, "OUT_OF_ORDER_SEQUENCE_EXCEPTION", False, False, "The tablet server received an out of order sequence batch."),
    (32, "DUPLICATE_SEQUENCE_EXCEPTION", False, False, "The tablet server received a duplicate sequence batch."),
    (33, "UNKNOWN_WRITER_ID_EXCEPTION", False, False, "This exception is raised by the tablet server if it could not "
     "locate the writer metadata."),
    (34, "INVALID_COLUMN_PROJECTION", False, False, "The requested column projection is invalid."),
    (35, "INVALID_TARGET_COLUMN", False, False, "The requested target column to write is invalid."),
    (36, "PARTITION_NOT_EXISTS", False, False, "The partition does not exist."),
    (37, "TABLE_NOT_PARTITIONED_EXCEPTION", False, False, "The table is not partitioned."),
    (38, "INVALID_TIMESTAMP_EXCEPTION", False, False, "The timestamp is invalid."),
    (39, "INVALID_CONFIG_EXCEPTION", False, False, "The config is invalid."),
    (40, "LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION", False, False, "The lake storage is not configured."),
    (41, "KV_SNAPSHOT_NOT_EXIST", False, False, "The kv snapshot does not exist."),
    (42, "PARTITION_ALREADY_EXISTS", False, False, "The partition already exists."),
    (43, "PARTITION_SPEC_INVALID_EXCEPTION", False, False, "The partition spec is invalid."),
    (44, "LEADER_NOT_AVAILABLE_EXCEPTION", True, True, "There is no currently available leader for the given "
     "partition."),
    (45, "PARTITION_MAX_NUM_EXCEPTION", False, False, "Exceed the maximum number of partitions."),
    (46, "AUTHENTICATE_EXCEPTION", False, False, "Authentication failed."),
    (47, "SECURITY_DISABLED_EXCEPTION", False, False, "Security is disabled."),
    (48, "AUTHORIZATION_EXCEPTION", False, False, "Authorization failed."),
    (49, "BUCKET_MAX_NUM_EXCEPTION", False, False, "Exceed the maximum number of buckets."),
    (50, "FENCED_TIERING_EPOCH_EXCEPTION", False, False, "The tiering epoch is invalid."),
    (51, "RETRIABLE_AUTHENTICATE_EXCEPTION", False, False, "Authentication failed with retriable exception."),
    (52, "INVALID_SERVER_RACK_INFO_EXCEPTION", False, False, "The server rack info is invalid."),
    (53, "LAKE_SNAPSHOT_NOT_EXIST", False, False, "The lake snapshot is not exist."),
    (54, "LAKE_TABLE_ALREADY_EXIST", False, False, "The lake table already exists."),
    (55, "INELIGIBLE_REPLICA_EXCEPTION", False, False, "The new ISR contains at least one ineligible replica."),
    (56, "INVALID_ALTER_TABLE_EXCEPTION", False, False, "The alter table is invalid."),
    (57, "DELETION_DISABLED_EXCEPTION", False, False, "Deletion operations are disabled on this table."),
    (58, "SERVER_NOT_EXIST_EXCEPTION", False, False, "The server does not exist."),
    (59, "SEVER_TAG_ALREADY_EXIST_EXCEPTION", False, False, "The server tag already exists."),
    (60, "SEVER_TAG_NOT_EXIST_EXCEPTION", False, False, "The server tag does not exist."),
    (61, "REBALANCE_FAILURE_EXCEPTION", False, False, "The rebalance task failed."),
    (62, "NO_REBALANCE_IN_PROGRESS_EXCEPTION", False, False, "No rebalance task in progress."),
    (63, "INVALID_PRODUCER_ID_EXCEPTION", False, False, "The producer id is invalid."),
    (64, "CONFIG_EXCEPTION", False, False, "A configuration error occurred."),
    (65, "NOT_COORDINATOR_LEADER_EXCEPTION", False, False, "The coordinator is not the active leader."),
    (66, "SCANNER_EXPIRED", False, False, "The scanner session has expired."),
    (67, "UNKNOWN_SCANNER_ID", False, False, "The scanner id is unknown."),
    (68, "INVALID_SCAN_REQUEST", False, False, "The scan request is invalid."),
    (69, "TOO_MANY_SCANNERS", False, False, "Too many concurrent scanners."),
    (70, "DISK_WRITE_LOCKED", True, False, "Writes are locked because disk usage is too high."),
    (71, "INSUFFICIENT_KV_LEADER_REPLICA_CAPACITY", False, False, "Insufficient kv leader replica capacity."),
    (72, "STORAGE_BACKPRESSURE_EXCEPTION", True, False, "The server is under storage backpressure."),
    (73, "HISTORICAL_PARTITION_THROTTLED", True, False, "Writes to historical partitions are throttled."),
]

ERRORS: dict[int, ErrorInfo] = {row[0]: ErrorInfo(*row) for row in _TABLE}
BY_NAME: dict[str, int] = {info.name: info.code for info in ERRORS.values()}

# Client-side failures (bad input, closed writer, timeouts before any server answered): pyfluss's -2.
CLIENT_ERROR = -2


#: Codes after which a client drops its cached leaders and asks again: the table's own refresh flag
#: (the Java InvalidMetadataException family). Writers, lookups and snapshot reads use it as is.
REFRESH_METADATA_CODES: frozenset[int] = frozenset(
    code for code, row in ERRORS.items() if row.refresh_metadata)


def info(code: int) -> ErrorInfo:
    found = ERRORS.get(code)
    if found is None:
        return ErrorInfo(code, f"UNKNOWN_CODE_{code}", False, False, f"Unknown error code {code}.")
    return found


def is_retriable(code: int) -> bool:
    return info(code).retriable


def default_message(code: int) -> str:
    return info(code).message


class Errors:
    """Attribute access to codes by name: ``Errors.TABLE_NOT_EXIST == 7``.

    Written out (not filled in from ``_TABLE``) so that IDEs and type checkers see the names;
    tests/rpc/test_generated_tables.py keeps them equal to the table and prints the lines to paste.
    """

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    NETWORK_EXCEPTION = 1
    UNSUPPORTED_VERSION = 2
    CORRUPT_MESSAGE = 3
    DATABASE_NOT_EXIST = 4
    DATABASE_NOT_EMPTY = 5
    DATABASE_ALREADY_EXIST = 6
    TABLE_NOT_EXIST = 7
    TABLE_ALREADY_EXIST = 8
    SCHEMA_NOT_EXIST = 9
    LOG_STORAGE_EXCEPTION = 10
    KV_STORAGE_EXCEPTION = 11
    NOT_LEADER_OR_FOLLOWER = 12
    RECORD_TOO_LARGE_EXCEPTION = 13
    CORRUPT_RECORD_EXCEPTION = 14
    INVALID_TABLE_EXCEPTION = 15
    INVALID_DATABASE_EXCEPTION = 16
    INVALID_REPLICATION_FACTOR = 17
    INVALID_REQUIRED_ACKS = 18
    LOG_OFFSET_OUT_OF_RANGE_EXCEPTION = 19
    NON_PRIMARY_KEY_TABLE_EXCEPTION = 20
    UNKNOWN_TABLE_OR_BUCKET_EXCEPTION = 21
    INVALID_UPDATE_VERSION_EXCEPTION = 22
    INVALID_COORDINATOR_EXCEPTION = 23
    FENCED_LEADER_EPOCH_EXCEPTION = 24
    REQUEST_TIME_OUT = 25
    STORAGE_EXCEPTION = 26
    OPERATION_NOT_ATTEMPTED_EXCEPTION = 27
    NOT_ENOUGH_REPLICAS_AFTER_APPEND_EXCEPTION = 28
    NOT_ENOUGH_REPLICAS_EXCEPTION = 29
    SECURITY_TOKEN_EXCEPTION = 30
    OUT_OF_ORDER_SEQUENCE_EXCEPTION = 31
    DUPLICATE_SEQUENCE_EXCEPTION = 32
    UNKNOWN_WRITER_ID_EXCEPTION = 33
    INVALID_COLUMN_PROJECTION = 34
    INVALID_TARGET_COLUMN = 35
    PARTITION_NOT_EXISTS = 36
    TABLE_NOT_PARTITIONED_EXCEPTION = 37
    INVALID_TIMESTAMP_EXCEPTION = 38
    INVALID_CONFIG_EXCEPTION = 39
    LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION = 40
    KV_SNAPSHOT_NOT_EXIST = 41
    PARTITION_ALREADY_EXISTS = 42
    PARTITION_SPEC_INVALID_EXCEPTION = 43
    LEADER_NOT_AVAILABLE_EXCEPTION = 44
    PARTITION_MAX_NUM_EXCEPTION = 45
    AUTHENTICATE_EXCEPTION = 46
    SECURITY_DISABLED_EXCEPTION = 47
    AUTHORIZATION_EXCEPTION = 48
    BUCKET_MAX_NUM_EXCEPTION = 49
    FENCED_TIERING_EPOCH_EXCEPTION = 50
    RETRIABLE_AUTHENTICATE_EXCEPTION = 51
    INVALID_SERVER_RACK_INFO_EXCEPTION = 52
    LAKE_SNAPSHOT_NOT_EXIST = 53
    LAKE_TABLE_ALREADY_EXIST = 54
    INELIGIBLE_REPLICA_EXCEPTION = 55
    INVALID_ALTER_TABLE_EXCEPTION = 56
    DELETION_DISABLED_EXCEPTION = 57
    SERVER_NOT_EXIST_EXCEPTION = 58
    SEVER_TAG_ALREADY_EXIST_EXCEPTION = 59
    SEVER_TAG_NOT_EXIST_EXCEPTION = 60
    REBALANCE_FAILURE_EXCEPTION = 61
    NO_REBALANCE_IN_PROGRESS_EXCEPTION = 62
    INVALID_PRODUCER_ID_EXCEPTION = 63
    CONFIG_EXCEPTION = 64
    NOT_COORDINATOR_LEADER_EXCEPTION = 65
    SCANNER_EXPIRED = 66
    UNKNOWN_SCANNER_ID = 67
    INVALID_SCAN_REQUEST = 68
    TOO_MANY_SCANNERS = 69
    DISK_WRITE_LOCKED = 70
    INSUFFICIENT_KV_LEADER_REPLICA_CAPACITY = 71
    STORAGE_BACKPRESSURE_EXCEPTION = 72
    HISTORICAL_PARTITION_THROTTLED = 73
    CLIENT_ERROR = CLIENT_ERROR
