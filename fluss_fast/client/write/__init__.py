"""Log-table writing: AppendWriter and WriteResultHandle (and, later, the KV writer)."""
from .batch import WriteResultHandle
from .writer import AppendWriter

__all__ = ["AppendWriter", "WriteResultHandle"]
