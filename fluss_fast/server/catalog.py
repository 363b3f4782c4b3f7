"""The coordinator's catalog: databases, tables, partitions and the id counters.

Everything lives in memory and is written to ``DATA_DIR/catalog/catalog.json`` after every change
(temp file + fsync + rename, then an fsync of the directory), so a crash leaves either the old or the
new state and a restart continues the id counters where they were: ids are never reused
(docs/contributing/protocol.md §7.5).
Validation is not done here; the coordinator checks requests and then calls the mutators.
"""
from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..datatypes import SchemaInfo, TableDescriptorInfo

CATALOG_FILE = "catalog.json"
FORMAT_VERSION = 1
BUILTIN_DATABASE = "fluss"


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class PartitionEntry:
    partition_id: int
    name: str
    spec: dict  # partition key -> value, in table partition-key order
    created_time: int

    def to_json(self) -> dict:
        return {"id": self.partition_id, "name": self.name, "spec": [[k, v] for k, v in self.spec.items()],
                "created_time": self.created_time}

    @staticmethod
    def from_json(obj: dict) -> PartitionEntry:
        return PartitionEntry(int(obj["id"]), obj["name"], {k: v for k, v in obj["spec"]}, int(obj["created_time"]))


@dataclass
class TableEntry:
    table_id: int
    database: str
    table_name: str
    descriptor: TableDescriptorInfo  # stored form, defaults applied
    schema_id: int
    schemas: dict  # schema id -> SchemaInfo
    created_time: int
    modified_time: int
    partitions: dict = field(default_factory=dict)  # partition id -> PartitionEntry
    # Serialized stored descriptor: every metadata answer carries it, so build it once.
    _table_json: bytes | None = field(default=None, repr=False, compare=False)
    _by_name: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def path(self) -> str:
        return f"{self.database}.{self.table_name}"

    @property
    def is_partitioned(self) -> bool:
        return bool(self.descriptor.partition_keys)

    @property
    def has_primary_key(self) -> bool:
        return bool(self.descriptor.schema.primary_key)

    @property
    def bucket_count(self) -> int:
        return self.descriptor.bucket_count or 1

    @property
    def schema(self) -> SchemaInfo:
        return self.schemas[self.schema_id]

    @property
    def table_json(self) -> bytes:
        if self._table_json is None:
            self._table_json = self.descriptor.to_json_bytes()
        return self._table_json

    def partition_by_name(self, name: str) -> PartitionEntry | None:
        return self._by_name.get(name)

    def _index_partition(self, p: PartitionEntry) -> None:
        self.partitions[p.partition_id] = p
        self._by_name[p.name] = p

    def to_json(self) -> dict:
        return {
            "id": self.table_id,
            "database": self.database,
            "name": self.table_name,
            "descriptor": self.descriptor.to_json(),
            "schema_id": self.schema_id,
            "schemas": {str(k): s.to_json() for k, s in self.schemas.items()},
            "created_time": self.created_time,
            "modified_time": self.modified_time,
            "partitions": [p.to_json() for p in self.partitions.values()],
        }

    @staticmethod
    def from_json(obj: dict) -> TableEntry:
        entry = TableEntry(
            int(obj["id"]), obj["database"], obj["name"], TableDescriptorInfo.from_json(obj["descriptor"]),
            int(obj["schema_id"]), {int(k): SchemaInfo.from_json(v) for k, v in obj["schemas"].items()},
            int(obj["created_time"]), int(obj["modified_time"]))
        for p in obj.get("partitions", []):
            entry._index_partition(PartitionEntry.from_json(p))
        return entry


@dataclass
class DatabaseEntry:
    name: str
    comment: str | None
    custom_properties: dict
    created_time: int
    modified_time: int
    tables: dict = field(default_factory=dict)  # table name -> TableEntry

    def descriptor_json(self) -> bytes:
        out: dict = {"version": 1}
        if self.comment is not None:
            out["comment"] = self.comment
        out["custom_properties"] = dict(self.custom_properties)
        return json.dumps(out, separators=(",", ":")).encode()

    def to_json(self) -> dict:
        return {"name": self.name, "comment": self.comment, "custom_properties": self.custom_properties,
                "created_time": self.created_time, "modified_time": self.modified_time}


class Catalog:
    """In-memory catalog with write-through persistence. Mutators change memory at once; callers then
    ``await catalog.commit()`` before answering, so an acknowledged change is on disk."""

    def __init__(self, root_dir: str):
        self.root_dir = root_dir
        self.databases: dict[str, DatabaseEntry] = {}
        self.tables_by_id: dict[int, TableEntry] = {}
        self._partition_owner: dict[int, TableEntry] = {}
        self.next_table_id = 0
        self.next_partition_id = 0
        self._file = os.path.join(root_dir, CATALOG_FILE)
        self._writer: ThreadPoolExecutor | None = None
        self._write_lock = threading.Lock()
        self._version = 0
        self._written_version = 0
        os.makedirs(root_dir, exist_ok=True)
        self._load()
        if BUILTIN_DATABASE not in self.databases:
            t = now_ms()
            self.databases[BUILTIN_DATABASE] = DatabaseEntry(BUILTIN_DATABASE, None, {}, t, t)
            self.save_sync()

    # -- lookups -------------------------------------------------------------------------------
    def table_by_id(self, table_id: int) -> TableEntry | None:
        return self.tables_by_id.get(table_id)

    def partition_by_id(self, table_id: int, partition_id: int) -> PartitionEntry | None:
        t = self.tables_by_id.get(table_id)
        return t.partitions.get(partition_id) if t is not None else None

    def table_of_partition(self, partition_id: int) -> TableEntry | None:
        return self._partition_owner.get(partition_id)

    def table(self, database: str, table_name: str) -> TableEntry | None:
        db = self.databases.get(database)
        return db.tables.get(table_name) if db is not None else None

    # -- mutators ------------------------------------------------------------------------------
    def add_database(self, name: str, comment: str | None, custom: dict) -> DatabaseEntry:
        t = now_ms()
        db = DatabaseEntry(name, comment, dict(custom), t, t)
        self.databases[name] = db
        self._version += 1
        return db

    def remove_database(self, name: str) -> list:
        """Returns the dropped tables (their data must be cleaned up too)."""
        db = self.databases.pop(name)
        dropped = list(db.tables.values())
        for t in dropped:
            self._forget_table(t)
        self._version += 1
        return dropped

    def add_table(self, database: str, table_name: str, descriptor: TableDescriptorInfo) -> TableEntry:
        t = now_ms()
        entry = TableEntry(self.next_table_id, database, table_name, descriptor, 1, {1: descriptor.schema}, t, t)
        self.next_table_id += 1
        self.databases[database].tables[table_name] = entry
        self.tables_by_id[entry.table_id] = entry
        self._version += 1
        return entry

    def remove_table(self, entry: TableEntry) -> None:
        self.databases[entry.database].tables.pop(entry.table_name, None)
        self._forget_table(entry)
        self._version += 1

    def _forget_table(self, entry: TableEntry) -> None:
        self.tables_by_id.pop(entry.table_id, None)
        for pid in entry.partitions:
            self._partition_owner.pop(pid, None)

    def add_partition(self, entry: TableEntry, name: str, spec: dict) -> PartitionEntry:
        p = PartitionEntry(self.next_partition_id, name, dict(spec), now_ms())
        self.next_partition_id += 1
        entry._index_partition(p)
        self._partition_owner[p.partition_id] = entry
        self._version += 1
        return p

    def remove_partition(self, entry: TableEntry, p: PartitionEntry) -> None:
        entry.partitions.pop(p.partition_id, None)
        entry._by_name.pop(p.name, None)
        self._partition_owner.pop(p.partition_id, None)
        self._version += 1

    def touch(self) -> None:
        """Mark an in-place change of an entry (e.g. an altered database) for the next commit."""
        self._version += 1

    # -- persistence ---------------------------------------------------------------------------
    def snapshot(self) -> dict:
        dbs = []
        for db in self.databases.values():
            d = db.to_json()
            d["tables"] = [t.to_json() for t in db.tables.values()]
            dbs.append(d)
        return {"format": FORMAT_VERSION, "next_table_id": self.next_table_id,
                "next_partition_id": self.next_partition_id, "databases": dbs}

    def _load(self) -> None:
        if not os.path.exists(self._file):
            return
        with open(self._file, "rb") as f:
            obj = json.loads(f.read().decode("utf-8"))
        if obj.get("format") != FORMAT_VERSION:
            raise RuntimeError(f"catalog {self._file} has unsupported format {obj.get('format')!r}")
        self.next_table_id = int(obj["next_table_id"])
        self.next_partition_id = int(obj["next_partition_id"])
        for d in obj["databases"]:
            db = DatabaseEntry(d["name"], d.get("comment"), dict(d.get("custom_properties") or {}),
                               int(d["created_time"]), int(d["modified_time"]))
            self.databases[db.name] = db
            for tj in d.get("tables", []):
                t = TableEntry.from_json(tj)
                db.tables[t.table_name] = t
                self.tables_by_id[t.table_id] = t
                for pid in t.partitions:
                    self._partition_owner[pid] = t

    def _write(self, data: bytes, version: int) -> None:
        with self._write_lock:
            if version <= self._written_version:
                return  # a later snapshot already covers this change
            tmp = self._file + ".tmp"
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self._file)
            try:
                fd = os.open(self.root_dir, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError:
                pass  # some file systems cannot fsync a directory; the rename is still atomic
            self._written_version = version

    def _encode(self) -> bytes:
        return json.dumps(self.snapshot(), separators=(",", ":")).encode()

    def save_sync(self) -> None:
        self._version += 1
        self._write(self._encode(), self._version)

    async def commit(self) -> None:
        """Persist the current state; file I/O runs on a writer thread so the loop keeps serving."""
        if self._version <= self._written_version:
            return
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fluss-catalog")
        data, version = self._encode(), self._version
        await asyncio.get_running_loop().run_in_executor(self._writer, self._write, data, version)

    def close(self) -> None:
        if self._version > self._written_version:
            self._write(self._encode(), self._version)
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None
