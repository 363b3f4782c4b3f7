"""The one error the Java cluster launcher raises."""
from __future__ import annotations


class ClusterError(RuntimeError):
    """The cluster could not be assembled, started or stopped; the message is one line that says why."""
