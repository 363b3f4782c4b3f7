"""Log scanning: the TableScan builder, LogScanner / BatchScanner and what they return."""
from .builder import TableScan
from .limit import BatchScanner
from .records import RecordBatch, ScanRecord, ScanRecords
from .scanner import LogScanner

__all__ = ["TableScan", "LogScanner", "BatchScanner", "ScanRecord", "ScanRecords", "RecordBatch"]
