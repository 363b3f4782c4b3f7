"""The Python examples of the user's three guides, run as written against the embedded server.

The seeds are /work/shared/seeds/000 (pyfluss 1.0.0's "Log Tables" page), 001 (its API reference)
and 002 (the older client guide). Each example below is the guide's code, unchanged except for
the bootstrap address and ``import fluss_fast as fluss``; the doc text lost some indentation in
extraction, which is restored. An example runs with top-level ``await`` in a namespace holding
what the guide assumes (``conn``, ``admin``, ``table_path``, input data), and a ``print`` that
records what the example prints: the assertions are on that output and on the data in the table.
Examples that loop forever (``while True: poll``) are stopped by that ``print`` once everything
expected was printed.

Examples that are valid pyfluss 1.0.0 code also run with the real pyfluss on the same server, and
both clients must produce the same output. (Several are not valid for pyfluss 1.0.0: its scanner
reads must be awaited and ``get_admin()`` is not awaitable, yet the guides write
``scanner.to_arrow()`` and ``await conn.get_admin()``; fluss_fast accepts both spellings.)
Primary-key examples run as written.
"""
from __future__ import annotations

import ast
import asyncio
import datetime as dt
import decimal
import textwrap

import pandas as pd
import pyarrow as pa
import pytest

import fluss_fast

fluss = pytest.importorskip("fluss")
pytestmark = [pytest.mark.compat, pytest.mark.timeout(90)]

GUIDE_ADDRESS = "127.0.0.1:9123"


# -- the examples, from the seeds ------------------------------------------------------------------

# 000 "Log Tables" -- Creating a Log Table
LOG_CREATE = '''
import pyarrow as pa

schema = fluss.Schema(pa.schema([
    pa.field("id", pa.int32()),
    pa.field("name", pa.string()),
    pa.field("score", pa.float32()),
]))

table_path = fluss.TablePath("fluss", "events")
await admin.create_table(table_path, fluss.TableDescriptor(schema), ignore_if_exists=True)
'''

# 000 -- Writing (the older guide's block is the same but for ``await table.new_append_writer()``)
LOG_WRITE = '''
table = await conn.get_table(table_path)
writer = table.new_append().create_writer()

# Fire-and-forget: queue writes, flush at the end
writer.append({"id": 1, "name": "Alice", "score": 95.5})
writer.append([2, "Bob", 87.0])
await writer.flush()

# Per-record acknowledgment
handle = writer.append({"id": 3, "name": "Charlie", "score": 91.0})
await handle.wait()

# Bulk writes
writer.write_arrow(pa_table) # PyArrow Table
writer.write_arrow_batch(record_batch) # PyArrow RecordBatch
writer.write_pandas(df) # Pandas DataFrame
await writer.flush()
'''

# 000 -- Batch Read (One-Shot)
LOG_BATCH_READ = '''
num_buckets = (await admin.get_table_info(table_path)).num_buckets

scanner = await table.new_scan().create_record_batch_log_scanner()
scanner.subscribe_buckets({i: fluss.EARLIEST_OFFSET for i in range(num_buckets)})

# Reads everything up to current latest offset, then returns
arrow_table = scanner.to_arrow()
df = scanner.to_pandas()
'''

# 000 -- Continuous Polling (the block holds two loops; each runs on its own)
LOG_POLL_ARROW = '''
# Batch scanner: poll as Arrow Tables
scanner = await table.new_scan().create_record_batch_log_scanner()
scanner.subscribe(bucket_id=0, start_offset=fluss.EARLIEST_OFFSET)

while True:
    result = scanner.poll_arrow(timeout_ms=5000)
    if result.num_rows > 0:
        print(result.to_pandas())
'''

LOG_POLL_RECORDS = '''
# Record scanner: poll individual records
scanner = await table.new_scan().create_log_scanner()
scanner.subscribe_buckets({i: fluss.EARLIEST_OFFSET for i in range(num_buckets)})

while True:
    scan_records = scanner.poll(timeout_ms=5000)

    for record in scan_records:
        print(f"offset={record.offset}, change={record.change_type.short_string()}, row={record.row}")

    # Or per-bucket access (dict-like)
    for bucket, records in scan_records.items():
        for record in records:
            print(f"bucket={bucket.bucket_id}, offset={record.offset}, row={record.row}")
'''

# 000 -- Unsubscribing
LOG_UNSUBSCRIBE = '''
scanner.unsubscribe(bucket_id=0)
'''

# 000 -- Subscribe from Latest Offset
LOG_FROM_LATEST = '''
admin = await conn.get_admin()
offsets = await admin.list_offsets(table_path, [0], fluss.OffsetSpec.latest())
latest = offsets[0]

scanner = await table.new_scan().create_record_batch_log_scanner()
scanner.subscribe(bucket_id=0, start_offset=latest)
'''

# 000 -- Column Projection (two spellings; each runs on its own)
LOG_PROJECT_INDEX = '''
scanner = await table.new_scan().project([0, 2]).create_record_batch_log_scanner()
'''
LOG_PROJECT_NAME = '''
# or by name
scanner = await table.new_scan().project_by_name(["id", "score"]).create_record_batch_log_scanner()
'''

# 001 "API Reference" -- ScanRecords
REF_SCAN_RECORDS = '''
scan_records = scanner.poll(timeout_ms=5000)
# Sequence access
scan_records[0] # first record
scan_records[-1] # last record
scan_records[:5] # first 5 records
# Per-bucket access
for bucket, records in scan_records.items():
    for record in records:
        print(f"bucket={bucket.bucket_id}, offset={record.offset}, row={record.row}")
# Flat iteration
for record in scan_records:
    print(record.row)
'''

# 001 -- OffsetSpec
REF_OFFSET_SPEC = '''
offsets = await admin.list_offsets(table_path, [0], fluss.OffsetSpec.latest())
scanner.subscribe(bucket_id=0, start_offset=offsets[0])
'''

# 001 -- FlussConnection table: ``await conn.get_admin()``, ``conn.close()``
REF_CONNECTION = '''
admin = await conn.get_admin()
conn.close()
'''

# 002 (older guide) -- Quick Start, a whole program
OLD_QUICK_START = '''
import asyncio
import pyarrow as pa
import fluss

async def main():
    # Connect
    config = fluss.Config({"bootstrap.servers": "127.0.0.1:9123"})
    conn = await fluss.FlussConnection.connect(config)
    admin = await conn.get_admin()

    # Create a log table
    schema = fluss.Schema(pa.schema([
        pa.field("id", pa.int32()),
        pa.field("name", pa.string()),
        pa.field("score", pa.float32()),
    ]))
    table_path = fluss.TablePath("fluss", "quick_start")
    await admin.create_table(table_path, fluss.TableDescriptor(schema), ignore_if_exists=True)

    # Write
    table = await conn.get_table(table_path)
    writer = await table.new_append_writer()
    writer.append({"id": 1, "name": "Alice", "score": 95.5})
    writer.append({"id": 2, "name": "Bob", "score": 87.0})
    await writer.flush()

    # Read
    num_buckets = (await admin.get_table(table_path)).num_buckets
    scanner = await table.new_scan().create_batch_scanner()
    scanner.subscribe_buckets({i: fluss.EARLIEST_OFFSET for i in range(num_buckets)})
    print(scanner.to_pandas())

    # Cleanup
    await admin.drop_table(table_path, ignore_if_not_exists=True)
    conn.close()

asyncio.run(main())
'''

# 002 -- Connection Setup, and the context manager form
OLD_CONNECT = '''
config = fluss.Config({"bootstrap.servers": "127.0.0.1:9123"})
conn = await fluss.FlussConnection.connect(config)
'''
OLD_CONNECT_WITH = '''
with await fluss.FlussConnection.connect(config) as conn:
    ...
'''

# 002 -- Admin Operations
OLD_ADMIN = '''
admin = await conn.get_admin()
'''
OLD_DATABASES = '''
await admin.create_database("my_database", ignore_if_exists=True)
databases = await admin.list_databases()
exists = await admin.database_exists("my_database")
await admin.drop_database("my_database", ignore_if_not_exists=True, cascade=True)
'''
OLD_TABLES = '''
import pyarrow as pa

schema = fluss.Schema(pa.schema([
    pa.field("id", pa.int32()),
    pa.field("name", pa.string()),
    pa.field("amount", pa.int64()),
]))

table_path = fluss.TablePath("my_database", "my_table")
await admin.create_table(table_path, fluss.TableDescriptor(schema), ignore_if_exists=True)

table_info = await admin.get_table(table_path)
tables = await admin.list_tables("my_database")
await admin.drop_table(table_path, ignore_if_not_exists=True)
'''
# 002 -- Offsets (one statement per table kind: the last one needs a partitioned table)
OLD_OFFSETS = '''
# Latest offsets for buckets
offsets = await admin.list_offsets(table_path, bucket_ids=[0, 1], offset_type="latest")
'''
OLD_OFFSETS_TS = '''
# By timestamp
offsets = await admin.list_offsets(table_path, bucket_ids=[0], offset_type="timestamp", timestamp=1704067200000)
'''
OLD_OFFSETS_PARTITION = '''
# Per-partition offsets
offsets = await admin.list_partition_offsets(table_path, partition_name="US", bucket_ids=[0], offset_type="latest")
'''

# 002 -- Log Tables / Writing
OLD_WRITE = LOG_WRITE.replace("writer = table.new_append().create_writer()",
                              "writer = await table.new_append_writer()")
assert OLD_WRITE != LOG_WRITE

# 002 -- Batch Read (One-Shot)
OLD_BATCH_READ = '''
num_buckets = (await admin.get_table(table_path)).num_buckets

scanner = await table.new_scan().create_batch_scanner()
scanner.subscribe_buckets({i: fluss.EARLIEST_OFFSET for i in range(num_buckets)})

# Reads everything up to current latest offset, then returns
arrow_table = scanner.to_arrow()
df = scanner.to_pandas()
'''

# 002 -- Continuous Polling
OLD_POLL_ARROW = '''
# Batch scanner: poll as Arrow Tables
scanner = await table.new_scan().create_batch_scanner()
scanner.subscribe(bucket_id=0, start_offset=fluss.EARLIEST_OFFSET)

while True:
    result = scanner.poll_arrow(timeout_ms=5000)
    if result.num_rows > 0:
        print(result.to_pandas())
'''
OLD_POLL_RECORDS = '''
# Record scanner: poll individual records with metadata
scanner = await table.new_scan().create_log_scanner()
scanner.subscribe_buckets({i: fluss.EARLIEST_OFFSET for i in range(num_buckets)})

while True:
    for record in scanner.poll(timeout_ms=5000):
        print(f"offset={record.offset}, change={record.change_type.short_string()}, row={record.row}")
'''

# 002 -- Subscribe from Latest Offset
OLD_FROM_LATEST = '''
scanner = await table.new_scan().create_batch_scanner()
scanner.subscribe(bucket_id=0, start_offset=fluss.LATEST_OFFSET)
'''

# 002 -- Column Projection
OLD_PROJECT_INDEX = '''
scanner = await table.new_scan().project([0, 2]).create_batch_scanner()
'''
OLD_PROJECT_NAME = '''
# or by name
scanner = await table.new_scan().project_by_name(["id", "score"]).create_batch_scanner()
'''

# 002 -- Partitioned Tables
OLD_PARTITIONS = '''
schema = fluss.Schema(pa.schema([
    pa.field("id", pa.int32()),
    pa.field("region", pa.string()),
    pa.field("value", pa.int64()),
]))

table_path = fluss.TablePath("fluss", "partitioned_events")
await admin.create_table(
    table_path,
    fluss.TableDescriptor(schema, partition_keys=["region"], bucket_count=1),
    ignore_if_exists=True,
)

# Create partitions
await admin.create_partition(table_path, {"region": "US"}, ignore_if_exists=True)
await admin.create_partition(table_path, {"region": "EU"}, ignore_if_exists=True)

# List partitions
partition_infos = await admin.list_partition_infos(table_path)
'''
OLD_PARTITIONS_WRITE = '''
table = await conn.get_table(table_path)
writer = await table.new_append_writer()
writer.append({"id": 1, "region": "US", "value": 100})
writer.append({"id": 2, "region": "EU", "value": 200})
await writer.flush()
'''
OLD_PARTITIONS_READ = '''
scanner = await table.new_scan().create_batch_scanner()

# Subscribe to individual partitions
for p in partition_infos:
    scanner.subscribe_partition(partition_id=p.partition_id, bucket_id=0, start_offset=fluss.EARLIEST_OFFSET)

# Or batch-subscribe
scanner.subscribe_partition_buckets({
    (p.partition_id, 0): fluss.EARLIEST_OFFSET for p in partition_infos
})

print(scanner.to_pandas())
'''

# 002 -- Error Handling
OLD_ERRORS = '''
try:
    await admin.create_table(table_path, table_descriptor)
except fluss.FlussError as e:
    print(f"Fluss error: {e.message}")
'''

# 002 -- Primary Key Tables
OLD_PK_CREATE = '''
schema = fluss.Schema(
    pa.schema([
        pa.field("id", pa.int32()),
        pa.field("name", pa.string()),
        pa.field("age", pa.int64()),
    ]),
    primary_keys=["id"],
)
table_path = fluss.TablePath("fluss", "users")
await admin.create_table(table_path, fluss.TableDescriptor(schema, bucket_count=3), ignore_if_exists=True)
'''
OLD_PK_UPSERT = '''
table = await conn.get_table(table_path)

# Upsert (fire-and-forget, flush at the end)
writer = table.new_upsert()
writer.upsert({"id": 1, "name": "Alice", "age": 25})
writer.upsert({"id": 2, "name": "Bob", "age": 30})
await writer.flush()
'''
OLD_PK_LOOKUP = '''
# Lookup
lookuper = table.new_lookup()
result = await lookuper.lookup({"id": 1})
if result:
    print(f"Found: name={result['name']}, age={result['age']}")
'''
OLD_PK_PARTIAL = '''
partial_writer = table.new_upsert(columns=["id", "age"])
partial_writer.upsert({"id": 1, "age": 27})  # only updates age
await partial_writer.flush()
'''


# -- harness ------------------------------------------------------------------------------------------

class Enough(Exception):
    """Raised by the recording print to leave an example's ``while True`` loop."""


class Printed:
    """Stands in for ``print`` inside an example: keeps the objects and the text printed."""

    def __init__(self, stop=None):
        self.objects = []
        self.lines = []
        self._stop = stop

    def __call__(self, *args, sep=" ", end="\n", file=None, flush=False):
        self.objects.append(args[0] if len(args) == 1 else args)
        self.lines.append(sep.join(str(a) for a in args))
        if self._stop is not None and self._stop(self):
            raise Enough


def adapt(src: str, mod, bootstrap: str) -> str:
    """The only two edits an example gets: the server address and the import of the client."""
    src = textwrap.dedent(src).replace(GUIDE_ADDRESS, bootstrap)
    if mod is fluss_fast:
        src = src.replace("import fluss\n", "import fluss_fast as fluss\n")
    return src


async def run(src: str, ns: dict, *, stop=None) -> Printed:
    """Run an example (top-level ``await`` allowed) in ``ns``; returns what it printed."""
    printed = Printed(stop)
    ns["print"] = printed
    code = compile(adapt(src, ns["fluss"], ns["_bootstrap"]), "<guide example>", "exec",
                   flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    try:
        result = eval(code, ns)  # noqa: S307 - the guide's own example code
        if result is not None:
            await result
    except Enough:
        pass
    return printed


async def namespace(mod, server) -> dict:
    """What the examples assume exists: a connection and admin (obtained the pyfluss 1.0.0 way),
    and the inputs of the bulk-write example."""
    conn = await mod.FlussConnection.create(mod.Config({"bootstrap.servers": server.bootstrap_servers}))
    return {"fluss": mod, "_bootstrap": server.bootstrap_servers, "conn": conn, "admin": conn.get_admin(),
            "pa_table": pa.table({"id": pa.array([10, 11], pa.int32()), "name": ["Dan", "Eve"],
                                  "score": pa.array([70.25, 80.5], pa.float32())}),
            "record_batch": pa.record_batch([pa.array([20, 21], pa.int32()), pa.array(["Fay", None]),
                                             pa.array([1.5, None], pa.float32())], names=["id", "name", "score"]),
            "df": pd.DataFrame({"id": [30, 31], "name": ["Gus", "Hal"], "score": [-2.0, 3.25]})}


SCHEMA = pa.schema([pa.field("id", pa.int32()), pa.field("name", pa.string()), pa.field("score", pa.float32())])
WRITTEN = [(1, "Alice", 95.5), (2, "Bob", 87.0), (3, "Charlie", 91.0), (10, "Dan", 70.25), (11, "Eve", 80.5),
           (20, "Fay", 1.5), (21, None, None), (30, "Gus", -2.0), (31, "Hal", 3.25)]
ROWS = [dict(zip(SCHEMA.names, r, strict=True)) for r in WRITTEN]


def expected_table(rows=ROWS, columns=None) -> pa.Table:
    t = pa.Table.from_pylist(rows, schema=SCHEMA)
    return t.select(columns) if columns else t


async def drop(mod, server, *paths):
    conn = await mod.FlussConnection.create(mod.Config({"bootstrap.servers": server.bootstrap_servers}))
    admin = conn.get_admin()
    for db, name in paths:
        await admin.drop_table(mod.TablePath(db, name), ignore_if_not_exists=True)
    await conn.close()


async def read_all(table, columns=None) -> pa.Table:
    """Everything in the table, read the pyfluss 1.0.0 way (works with both clients)."""
    scan = table.new_scan()
    if columns:
        scan = scan.project_by_name(columns)
    sc = await scan.create_record_batch_log_scanner()
    sc.subscribe_buckets({b: -2 for b in range(table.get_table_info().num_buckets)})
    return await sc.to_arrow()


def _by_id(t) -> list:
    if isinstance(t, pd.DataFrame):
        t = pa.Table.from_pandas(t, preserve_index=False)
    return sorted(t.to_pylist(), key=lambda r: r["id"])


def _record_lines(rows, first_offset=0):
    flat = [f"offset={first_offset + i}, change=+A, row={r}" for i, r in enumerate(rows)]
    per_bucket = [f"bucket=0, offset={first_offset + i}, row={r}" for i, r in enumerate(rows)]
    return flat, per_bucket


async def _append_one(ns, row):
    w = ns["table"].new_append().create_writer()
    await w.append(row).wait()


# -- 000: the Log Tables page, every example, with fluss_fast ----------------------------------------

async def test_log_tables_page_runs_as_written(fluss_server):
    ff = fluss_fast
    await drop(ff, fluss_server, ("fluss", "events"))
    ns = await namespace(ff, fluss_server)
    try:
        assert not (await run(LOG_CREATE, ns)).lines
        info = await ns["admin"].get_table_info(ns["table_path"])
        assert info.get_column_names() == ["id", "name", "score"] and info.num_buckets == 1

        assert not (await run(LOG_WRITE, ns)).lines
        assert isinstance(ns["handle"], ff.WriteResultHandle)
        assert _by_id(await read_all(ns["table"])) == _by_id(expected_table())

        # one-shot read: to_arrow() without await is the table itself
        await run(LOG_BATCH_READ, ns)
        assert ns["num_buckets"] == 1
        arrow_table = ns["arrow_table"]
        assert arrow_table.num_rows == len(ROWS)
        assert arrow_table.schema == SCHEMA and arrow_table.equals(expected_table())
        # after a one-shot read the same scanner has nothing left to read, as with awaited calls
        with pytest.raises(ff.FlussError, match="No buckets subscribed"):
            len(ns["df"])

        # polling as Arrow until every row was printed
        p = await run(LOG_POLL_ARROW, ns, stop=lambda p: sum(len(o) for o in p.objects) >= len(ROWS))
        frames = p.objects
        assert all(isinstance(f, pd.DataFrame) for f in frames)
        got = pd.concat(frames, ignore_index=True)
        assert _by_id(got) == _by_id(expected_table().to_pandas())
        assert p.lines[0] == str(expected_table().slice(0, len(frames[0])).to_pandas())

        # polling records: one flat line and one per-bucket line per record
        p = await run(LOG_POLL_RECORDS, ns, stop=lambda p: len(p.lines) >= 2 * len(ROWS))
        flat, per_bucket = _record_lines(ROWS)
        assert [x for x in p.lines if x.startswith("offset=")] == flat
        assert [x for x in p.lines if x.startswith("bucket=")] == per_bucket

        # after unsubscribing, new rows are not delivered to that scanner
        record_scanner = ns["scanner"]
        await run(LOG_UNSUBSCRIBE, ns)
        await _append_one(ns, {"id": 99, "name": "late", "score": 0.0})
        assert (await record_scanner.poll(300)).count() == 0

        # from the latest offset: only what is appended afterwards
        await run(LOG_FROM_LATEST, ns)
        assert ns["latest"] == len(ROWS) + 1 and isinstance(ns["admin"], ff.FlussAdmin)
        await _append_one(ns, [100, "new", 1.0])
        got = await ns["scanner"].poll_arrow(5000)
        assert got.to_pylist() == [{"id": 100, "name": "new", "score": 1.0}]

        for src in (LOG_PROJECT_INDEX, LOG_PROJECT_NAME):
            await run(src, ns)
            ns["scanner"].subscribe(bucket_id=0, start_offset=ff.EARLIEST_OFFSET)
            t = await ns["scanner"].to_arrow()
            assert t.column_names == ["id", "score"]
            assert t.slice(0, len(ROWS)).equals(expected_table(columns=["id", "score"]))
    finally:
        await ns["conn"].close()
        await drop(ff, fluss_server, ("fluss", "events"))


# -- 000/001: the examples valid for pyfluss 1.0.0 give the same results with both clients -----------

async def _valid_examples(mod, server) -> dict:
    await drop(mod, server, ("fluss", "events"))
    ns = await namespace(mod, server)
    out = {}
    try:
        await run(LOG_CREATE, ns)
        info = await ns["admin"].get_table_info(ns["table_path"])
        out["info"] = (info.num_buckets, info.get_column_names(), info.get_schema().get_column_types(),
                       info.has_primary_key(), info.is_partitioned())
        await run(LOG_WRITE, ns)
        out["rows"] = _by_id(await read_all(ns["table"]))
        out["arrow"] = await read_all(ns["table"])
        for key, src in (("by_index", LOG_PROJECT_INDEX), ("by_name", LOG_PROJECT_NAME)):
            await run(src, ns)
            ns["scanner"].subscribe(bucket_id=0, start_offset=mod.EARLIEST_OFFSET)
            out[key] = await ns["scanner"].to_arrow()
        # 001's OffsetSpec example on a fresh record scanner: it sees only what comes next
        ns["scanner"] = await ns["table"].new_scan().create_log_scanner()
        await run(REF_OFFSET_SPEC, ns)
        out["latest"] = ns["offsets"]
        await _append_one(ns, {"id": 7, "name": "next", "score": 7.0})
        recs = await ns["scanner"].poll(5000)
        out["after_latest"] = [(r.offset, r.change_type.short_string(), r.row) for r in recs]
        await run(LOG_UNSUBSCRIBE, ns)
        await _append_one(ns, {"id": 8, "name": "unseen", "score": 8.0})
        out["after_unsubscribe"] = (await ns["scanner"].poll(300)).count()
        # the older guide's error-handling example (valid pyfluss code): the table exists now
        ns["table_descriptor"] = mod.TableDescriptor(ns["schema"])
        out["error"] = (await run(OLD_ERRORS, ns)).lines
        out["databases"] = await _databases_example(ns)
    finally:
        await ns["conn"].close()
        await drop(mod, server, ("fluss", "events"))
    return out


async def _databases_example(ns):
    await run(OLD_DATABASES, ns)
    after = await ns["admin"].database_exists("my_database")
    return "my_database" in ns["databases"], ns["exists"], after


async def test_examples_valid_for_pyfluss_give_the_same_results(fluss_server):
    ours = await _valid_examples(fluss_fast, fluss_server)
    theirs = await _valid_examples(fluss, fluss_server)
    assert ours["info"] == theirs["info"] == (1, ["id", "name", "score"], ["int", "string", "float"], False, False)
    assert ours["rows"] == theirs["rows"] == _by_id(expected_table())
    assert ours["arrow"].equals(theirs["arrow"]) and ours["arrow"].schema == SCHEMA
    for key in ("by_index", "by_name"):
        assert ours[key].equals(theirs[key])
        assert ours[key].column_names == ["id", "score"] and ours[key].num_rows == len(ROWS)
    assert ours["latest"] == theirs["latest"] == {0: len(ROWS)}
    assert ours["after_latest"] == theirs["after_latest"] == [
        (len(ROWS), "+A", {"id": 7, "name": "next", "score": 7.0})]
    assert ours["after_unsubscribe"] == theirs["after_unsubscribe"] == 0
    assert ours["error"] == theirs["error"] == ["Fluss error: Table fluss.events already exists."]
    assert ours["databases"] == theirs["databases"] == (True, True, False)


# -- 001: the API reference's examples ----------------------------------------------------------------

async def test_api_reference_examples(fluss_server):
    ff = fluss_fast
    await drop(ff, fluss_server, ("fluss", "events"))
    ns = await namespace(ff, fluss_server)
    try:
        await run(LOG_CREATE, ns)
        await run(LOG_WRITE, ns)
        ns["scanner"] = await ns["table"].new_scan().create_log_scanner()
        ns["scanner"].subscribe(0, ff.EARLIEST_OFFSET)
        p = await run(REF_SCAN_RECORDS, ns)
        recs = ns["scan_records"]
        n = len(recs)
        assert n == len(ROWS)  # everything was written before the poll, in one bucket
        assert recs[0].offset == 0 and recs[-1].offset == n - 1
        assert [r.offset for r in recs[:5]] == [0, 1, 2, 3, 4]
        assert recs.count() == n and not recs.is_empty() and recs.buckets() == [ff.TableBucket(
            ns["table"].get_table_info().table_id, 0)]
        _, per_bucket = _record_lines(ROWS)
        assert p.lines == per_bucket + [str(r) for r in ROWS]

        # ``await conn.get_admin()`` and a bare ``conn.close()`` (it closes: nothing to await)
        conn = ns["conn"]
        p = await run(REF_CONNECTION, ns)
        assert not p.lines and isinstance(ns["admin"], ff.FlussAdmin)
        for _ in range(100):
            if conn.closed:
                break
            await asyncio.sleep(0.01)
        assert conn.closed
        with pytest.raises(ff.FlussError):
            await conn.get_table(ns["table_path"])
    finally:
        await ns["conn"].close()
        await drop(ff, fluss_server, ("fluss", "events"))


# -- 002: the older guide, its log-table examples -------------------------------------------------------

def test_older_guide_quick_start_program(fluss_server):
    # A whole program ending in asyncio.run(main()): it runs outside the test's event loop.
    ns = {"fluss": fluss_fast, "_bootstrap": fluss_server.bootstrap_servers, "__name__": "__main__"}
    printed = Printed()
    ns["print"] = printed
    exec(compile(adapt(OLD_QUICK_START, fluss_fast, fluss_server.bootstrap_servers), "<quick start>", "exec"),
         ns)  # noqa: S102 - the guide's own program
    expected = pd.DataFrame({"id": pd.array([1, 2], dtype="int32"), "name": ["Alice", "Bob"],
                             "score": pd.array([95.5, 87.0], dtype="float32")})
    assert printed.lines == [str(expected)]
    assert printed.objects[0].equals(expected)

    async def gone():
        conn = await fluss_fast.FlussConnection.create(fluss_fast.Config(
            {"bootstrap.servers": fluss_server.bootstrap_servers}))
        try:
            return await conn.get_admin().table_exists(fluss_fast.TablePath("fluss", "quick_start"))
        finally:
            await conn.close()

    assert asyncio.run(gone()) is False


async def test_older_guide_connection_and_admin_examples(fluss_server):
    ns = {"fluss": fluss_fast, "_bootstrap": fluss_server.bootstrap_servers}
    await run(OLD_CONNECT, ns)
    conn = ns["conn"]
    assert isinstance(conn, fluss_fast.FlussConnection)
    assert ns["config"].bootstrap_servers == fluss_server.bootstrap_servers
    try:
        await run(OLD_ADMIN, ns)
        assert isinstance(ns["admin"], fluss_fast.FlussAdmin)
        await run(OLD_DATABASES, ns)
        assert "my_database" in ns["databases"] and ns["exists"] is True
        assert not await ns["admin"].database_exists("my_database")

        await ns["admin"].create_database("my_database", ignore_if_exists=True)
        await run(OLD_TABLES, ns)
        info = ns["table_info"]
        assert isinstance(info, fluss_fast.TableInfo) and info.table_path == ns["table_path"]
        assert info.get_column_names() == ["id", "name", "amount"] and info.num_buckets == 1
        assert ns["tables"] == ["my_table"]
        assert not await ns["admin"].table_exists(ns["table_path"])
        await ns["admin"].drop_database("my_database", cascade=True)
    finally:
        await conn.close()

    await run(OLD_CONNECT_WITH, ns)
    assert isinstance(ns["conn"], fluss_fast.FlussConnection)


async def test_older_guide_offsets_examples(fluss_server, unique_name):
    ns = await namespace(fluss_fast, fluss_server)
    admin, ff = ns["admin"], fluss_fast
    name = unique_name("offs")
    try:
        ns["table_path"] = path = ff.TablePath("fluss", name)
        await admin.create_table(path, ff.TableDescriptor(ff.Schema(SCHEMA), bucket_count=2))
        w = (await ns["conn"].get_table(path)).new_append().create_writer()
        for i in range(5):
            w.append({"id": i, "name": "x", "score": 0.0})
        await w.flush()
        await run(OLD_OFFSETS, ns)
        latest = ns["offsets"]
        assert set(latest) == {0, 1} and sum(latest.values()) == 5
        assert latest == await admin.list_offsets(path, [0, 1], ff.OffsetSpec.latest())
        await run(OLD_OFFSETS_TS, ns)
        # 2024-01-01 is before every write: the first offset of the bucket
        assert ns["offsets"] == {0: 0}

        ns["table_path"] = ppath = ff.TablePath("fluss", name + "_p")
        await admin.create_table(ppath, ff.TableDescriptor(
            ff.Schema(pa.schema([("id", pa.int32()), ("region", pa.string())])), partition_keys=["region"]))
        await admin.create_partition(ppath, {"region": "US"})
        pw = (await ns["conn"].get_table(ppath)).new_append().create_writer()
        await pw.append({"id": 1, "region": "US"}).wait()
        await run(OLD_OFFSETS_PARTITION, ns)
        assert ns["offsets"] == {0: 1}
    finally:
        await admin.drop_table(ff.TablePath("fluss", name), ignore_if_not_exists=True)
        await admin.drop_table(ff.TablePath("fluss", name + "_p"), ignore_if_not_exists=True)
        await ns["conn"].close()


async def test_older_guide_log_table_examples(fluss_server):
    ff = fluss_fast
    await drop(ff, fluss_server, ("fluss", "events"))
    ns = await namespace(ff, fluss_server)
    try:
        await run(LOG_CREATE, ns)  # the older guide's table: same example
        assert not (await run(OLD_WRITE, ns)).lines
        assert isinstance(ns["writer"], ff.AppendWriter)
        assert _by_id(await read_all(ns["table"])) == _by_id(expected_table())

        await run(OLD_BATCH_READ, ns)
        assert ns["num_buckets"] == 1
        assert ns["arrow_table"].equals(expected_table())

        p = await run(OLD_POLL_ARROW, ns, stop=lambda p: sum(len(o) for o in p.objects) >= len(ROWS))
        assert _by_id(pd.concat(p.objects, ignore_index=True)) == _by_id(expected_table().to_pandas())

        p = await run(OLD_POLL_RECORDS, ns, stop=lambda p: len(p.lines) >= len(ROWS))
        assert p.lines == _record_lines(ROWS)[0]

        await run(OLD_FROM_LATEST, ns)
        assert ns["scanner"].poll_arrow(200).num_rows == 0
        await _append_one(ns, {"id": 50, "name": "fresh", "score": 5.0})
        assert ns["scanner"].poll_arrow(5000).to_pylist() == [{"id": 50, "name": "fresh", "score": 5.0}]

        for src in (OLD_PROJECT_INDEX, OLD_PROJECT_NAME):
            await run(src, ns)
            ns["scanner"].subscribe(bucket_id=0, start_offset=ff.EARLIEST_OFFSET)
            t = ns["scanner"].to_arrow()
            assert t.column_names == ["id", "score"] and t.num_rows == len(ROWS) + 1
            # poll_batches: the older name of poll_record_batch
            ns["scanner"].subscribe(bucket_id=0, start_offset=ff.EARLIEST_OFFSET)
            batches = ns["scanner"].poll_batches(5000)
            assert batches and all(isinstance(b, ff.RecordBatch) for b in batches)
            assert batches[0].base_offset == 0 and batches[0].batch.schema.names == ["id", "score"]
    finally:
        await ns["conn"].close()
        await drop(ff, fluss_server, ("fluss", "events"))


async def test_older_guide_partitioned_examples(fluss_server):
    ff = fluss_fast
    await drop(ff, fluss_server, ("fluss", "partitioned_events"))
    ns = await namespace(ff, fluss_server)
    ns["pa"] = pa
    try:
        await run(OLD_PARTITIONS, ns)
        infos = ns["partition_infos"]
        assert sorted(p.partition_name for p in infos) == ["EU", "US"]
        await run(OLD_PARTITIONS_WRITE, ns)
        p = await run(OLD_PARTITIONS_READ, ns)
        assert len(p.lines) == 1
        got = sorted(p.objects[0].to_dict("records"), key=lambda r: r["id"])
        assert got == [{"id": 1, "region": "US", "value": 100}, {"id": 2, "region": "EU", "value": 200}]
        assert list(p.objects[0].columns) == ["id", "region", "value"]
    finally:
        await ns["conn"].close()
        await drop(ff, fluss_server, ("fluss", "partitioned_events"))


async def test_older_guide_primary_key_examples(fluss_server):
    ff = fluss_fast
    await drop(ff, fluss_server, ("fluss", "users"))
    ns = await namespace(ff, fluss_server)
    ns["pa"] = pa
    try:
        await run(OLD_PK_CREATE, ns)
        assert (await ns["admin"].get_table_info(ns["table_path"])).get_primary_keys() == ["id"]
        await run(OLD_PK_UPSERT, ns)
        p = await run(OLD_PK_LOOKUP, ns)
        assert p.lines == ["Found: name=Alice, age=25"]
        await run(OLD_PK_PARTIAL, ns)
        p = await run(OLD_PK_LOOKUP, ns)
        assert p.lines == ["Found: name=Alice, age=27"]
        assert ns["table"].has_primary_key()
    finally:
        await ns["conn"].close()
        await drop(ff, fluss_server, ("fluss", "users"))


async def test_older_guide_data_types_via_dicts(fluss_server, unique_name):
    # "All Python native types (date, time, datetime, Decimal) work when appending rows via dicts."
    ff = fluss_fast
    sc = pa.schema([("b", pa.bool_()), ("i", pa.int8()), ("f", pa.float64()), ("s", pa.string()),
                    ("by", pa.binary()), ("d", pa.date32()), ("t", pa.time32("ms")), ("ts", pa.timestamp("us")),
                    ("tl", pa.timestamp("us", tz="UTC")), ("dec", pa.decimal128(10, 2))])
    row = {"b": True, "i": -3, "f": 2.5, "s": "é", "by": b"\x00\x01", "d": dt.date(2024, 2, 29),
           "t": dt.time(1, 2, 3, 4000), "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 6),
           "tl": dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC), "dec": decimal.Decimal("123.45")}
    path = ff.TablePath("fluss", unique_name("types"))
    async with await ff.FlussConnection.create(ff.Config({"bootstrap.servers": fluss_server.bootstrap_servers})) as c:
        await c.get_admin().create_table(path, ff.TableDescriptor(ff.Schema(sc)))
        try:
            t = await c.get_table(path)
            writer = await t.new_append_writer()
            writer.append(row)
            await writer.flush()
            got = (await read_all(t)).to_pylist()
            assert got == [row]
        finally:
            await c.get_admin().drop_table(path)
