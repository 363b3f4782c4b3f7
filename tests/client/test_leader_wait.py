"""A bucket without a leader: the client asks the metadata again until one is elected, within the
request timeout. A Java cluster elects a new table's leaders after CREATE_TABLE has answered; the
embedded server answers with leaders at once, so here an in-process one is made to hide them for a
while (the --fluss-server=java runs meet the real thing in every test that creates a table)."""
from __future__ import annotations

import time

import pyarrow as pa
import pytest

import fluss_fast
from fluss_fast import FlussError
from fluss_fast.server.local import LocalServer

SCHEMA = pa.schema([pa.field("id", pa.int32()), pa.field("v", pa.string())])


class HiddenLeaders:
    """Makes the server's metadata answer list the buckets of one table without a leader (as Java's
    does before the election) until ``until`` (time.monotonic()); None hides them for good."""

    def __init__(self, srv: LocalServer, table_name: str, until=None):
        self.table_name = table_name
        self.until = until
        self.answers = 0
        coord = srv.server.coordinator
        fill, field = coord._fill_buckets, coord._table_metadata_field

        def hiding_fill(target, table_id, partition_id, entry):
            fill(target, table_id, partition_id, entry)
            if self.hiding(entry):
                self.answers += 1
                for bm in target:
                    bm.ClearField("leader_id")

        def uncached_field(entry):
            if entry.table_name == self.table_name:
                # the answer is cached per table: build it anew on every request
                coord._meta_cache.pop(entry.table_id, None)
            return field(entry)

        pfield = coord._partition_metadata_field

        def uncached_partition_field(entry, part):
            if entry.table_name == self.table_name:
                coord._pmeta_cache.pop(part.partition_id, None)
            return pfield(entry, part)

        coord._fill_buckets = hiding_fill
        coord._table_metadata_field = uncached_field
        coord._partition_metadata_field = uncached_partition_field

    def hiding(self, entry) -> bool:
        return entry.table_name == self.table_name and (self.until is None or time.monotonic() < self.until)


@pytest.fixture
def server():
    with LocalServer(tablet_servers=1) as srv:
        yield srv


async def _connect(srv, **extra):
    return await fluss_fast.FlussConnection.create(fluss_fast.Config({"bootstrap.servers": srv.bootstrap_servers,
                                                                      **extra}))


async def test_reads_and_lookups_wait_for_the_election(server, unique_name):
    conn = await _connect(server)
    try:
        admin = conn.get_admin()
        log_path = fluss_fast.TablePath("fluss", unique_name("lw_log"))
        pk_path = fluss_fast.TablePath("fluss", unique_name("lw_pk"))
        await admin.create_table(log_path, fluss_fast.TableDescriptor(fluss_fast.Schema(SCHEMA), bucket_count=2))
        await admin.create_table(pk_path, fluss_fast.TableDescriptor(
            fluss_fast.Schema(SCHEMA, primary_keys=["id"]), bucket_count=2))

        hidden = HiddenLeaders(server, log_path.table_name, until=time.monotonic() + 0.6)
        started = time.monotonic()
        assert await admin.list_offsets(log_path, [0, 1], fluss_fast.OffsetSpec.latest()) == {0: 0, 1: 0}
        assert time.monotonic() - started >= 0.5 and hidden.answers >= 2  # it asked again, and waited

        hidden = HiddenLeaders(server, pk_path.table_name, until=time.monotonic() + 0.6)
        table = await conn.get_table(pk_path)
        started = time.monotonic()
        assert await table.new_lookup().create_lookuper().lookup({"id": 1}) is None
        assert time.monotonic() - started >= 0.5 and hidden.answers >= 2
    finally:
        await conn.close()


async def test_no_leader_within_the_request_timeout_is_an_error(server, unique_name):
    conn = await _connect(server, **{"request-timeout": "1000"})
    try:
        admin = conn.get_admin()
        path = fluss_fast.TablePath("fluss", unique_name("lw_never"))
        await admin.create_table(path, fluss_fast.TableDescriptor(fluss_fast.Schema(SCHEMA, primary_keys=["id"])))
        table = await conn.get_table(path)
        HiddenLeaders(server, path.table_name)

        started = time.monotonic()
        with pytest.raises(FlussError, match="No leader found for table bucket.*within the request timeout") as info:
            await admin.list_offsets(path, [0], fluss_fast.OffsetSpec.latest())
        assert info.value.error_code == -2  # pyfluss's code for a bucket without a leader
        assert 0.9 <= time.monotonic() - started < 10

        started = time.monotonic()
        with pytest.raises(FlussError, match="No leader found for bucket 0") as info:
            await table.new_lookup().create_lookuper().lookup({"id": 1})
        assert info.value.error_code == fluss_fast.ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION
        assert 0.9 <= time.monotonic() - started < 10

        # a bucket the table does not have is refused at once: no election will give it a leader
        started = time.monotonic()
        with pytest.raises(FlussError, match="the table has 1 buckets") as info:
            await admin.list_offsets(path, [3], fluss_fast.OffsetSpec.latest())
        assert time.monotonic() - started < 0.5
    finally:
        await conn.close()


async def test_writers_wait_for_the_election(server, unique_name):
    conn = await _connect(server)
    try:
        admin = conn.get_admin()
        log_path = fluss_fast.TablePath("fluss", unique_name("lw_wlog"))
        pk_path = fluss_fast.TablePath("fluss", unique_name("lw_wpk"))
        fields = [pa.field("region", pa.string()), pa.field("id", pa.int32()), pa.field("v", pa.string())]
        await admin.create_table(log_path, fluss_fast.TableDescriptor(fluss_fast.Schema(SCHEMA), bucket_count=2))
        await admin.create_table(pk_path, fluss_fast.TableDescriptor(
            fluss_fast.Schema(pa.schema(fields), primary_keys=["region", "id"]), partition_keys=["region"],
            bucket_count=2))

        hidden = HiddenLeaders(server, log_path.table_name, until=time.monotonic() + 0.6)
        table = await conn.get_table(log_path)
        w = table.new_append().create_writer()
        started = time.monotonic()
        handle = w.write_arrow_batch(pa.record_batch([pa.array([1, 2], pa.int32()), pa.array(["a", "b"])],
                                                     schema=SCHEMA))
        await w.flush()
        await handle.wait()
        assert time.monotonic() - started >= 0.5 and hidden.answers >= 2
        assert sum((await admin.list_offsets(log_path, [0, 1], fluss_fast.OffsetSpec.latest())).values()) == 2

        for region in ("US", "EU"):
            await admin.create_partition(pk_path, {"region": region})
        hidden = HiddenLeaders(server, pk_path.table_name, until=time.monotonic() + 0.6)
        table = await conn.get_table(pk_path)
        w = table.new_upsert().create_writer()
        started = time.monotonic()
        handle = w.upsert_arrow(pa.table({"region": ["US", "EU", "US"], "id": pa.array([1, 1, 2], pa.int32()),
                                          "v": ["x", "y", "z"]}))
        await w.flush()
        await handle.wait()
        assert time.monotonic() - started >= 0.5 and hidden.answers >= 2
        assert await table.new_lookup().create_lookuper().lookup(["EU", 1]) == {"region": "EU", "id": 1, "v": "y"}
    finally:
        await conn.close()
