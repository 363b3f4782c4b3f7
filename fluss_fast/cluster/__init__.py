"""`fluss-fast cluster`: a real Apache Fluss cluster (the Java servers) on this machine, assembled
from the release jars, for tests, benchmarks and trying fluss_fast against the real thing.

Importing this package starts nothing; it never imports the embedded server.
"""
from .artifacts import DEFAULT_FLUSS_VERSION, resolve_jars
from .errors import ClusterError
from .java import JavaCluster

__all__ = ["DEFAULT_FLUSS_VERSION", "ClusterError", "JavaCluster", "resolve_jars"]
