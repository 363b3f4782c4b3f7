"""How the read path treats per-bucket error codes: which re-resolve the leader, which are retried."""
from __future__ import annotations

from ...error_codes import Errors

__all__ = ["REFRESH_CODES", "RETRY_CODES", "RETRY_BACKOFF_S", "MAX_BACKOFF_S"]

# A fetch re-resolves the bucket's leader after these. Deliberately not the table's refresh set:
# NETWORK_EXCEPTION is handled apart (transport failures are counted per node), and a fenced leader
# epoch or a moved coordinator also mean the leader this fetch used is stale.
REFRESH_CODES = frozenset((Errors.NOT_LEADER_OR_FOLLOWER, Errors.LEADER_NOT_AVAILABLE_EXCEPTION,
                           Errors.FENCED_LEADER_EPOCH_EXCEPTION, Errors.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION,
                           Errors.INVALID_COORDINATOR_EXCEPTION))
# Per-bucket storage hiccups the fetch loop retries without refreshing anything.
RETRY_CODES = frozenset((Errors.LOG_STORAGE_EXCEPTION, Errors.KV_STORAGE_EXCEPTION,
                         Errors.STORAGE_EXCEPTION, Errors.UNKNOWN_SERVER_ERROR))

RETRY_BACKOFF_S = 0.05
MAX_BACKOFF_S = 1.0
