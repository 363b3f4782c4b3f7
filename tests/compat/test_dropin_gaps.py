"""Behaviour that code written for pyfluss 1.0.0 can observe, run on pyfluss and fluss_fast side by side.

Every scenario drives both clients with the same calls against the same embedded server and compares
what comes back: results, or the exception's type, error code and key words of its message (ours
may say more, e.g. name the table, but carries pyfluss's words).
"""
from __future__ import annotations

import asyncio
import gc
import inspect

import pyarrow as pa
import pytest

import fluss_fast as ff

fluss = pytest.importorskip("fluss")
pytestmark = [pytest.mark.compat, pytest.mark.timeout(120)]

CALL_TIMEOUT = 20
SCHEMA = pa.schema([("a", pa.int32()), ("s", pa.string())])
MODS = (fluss, ff)


async def call(aw):
    return await asyncio.wait_for(aw, CALL_TIMEOUT)


class Outcome:
    """What one call did: its value, or its exception's type, code and message."""

    def __init__(self, value=None, exc=None):
        self.value = value
        self.exc = exc

    @property
    def ok(self):
        return self.exc is None

    @property
    def kind(self):
        return None if self.exc is None else type(self.exc).__name__

    @property
    def code(self):
        return getattr(self.exc, "error_code", None)

    @property
    def message(self):
        return "" if self.exc is None else str(self.exc)

    def __repr__(self):
        if self.ok:
            return f"ok({self.value!r})"
        return f"{self.kind}(code={self.code}, {self.message!r})"


async def outcome(fn, *args):
    try:
        result = fn(*args)
        if asyncio.iscoroutine(result) or hasattr(result, "__await__"):
            result = await call(result)
        return Outcome(result)
    except Exception as exc:  # noqa: BLE001 - the exception is what is compared
        return Outcome(exc=exc)


def assert_same_failure(theirs: Outcome, ours: Outcome, *key_words):
    assert not theirs.ok, f"pyfluss succeeded: {theirs}"
    assert not ours.ok, f"fluss_fast succeeded where pyfluss raised {theirs}: {ours}"
    assert (ours.kind, ours.code) == (theirs.kind, theirs.code), (theirs, ours)
    for word in key_words:
        assert word.lower() in theirs.message.lower(), (word, theirs)
        assert word.lower() in ours.message.lower(), (word, ours)


def _cfg(mod, server, **extra):
    return mod.Config({"bootstrap.servers": server.bootstrap_servers, **extra})


def _rows_batch(ids, names=None):
    return pa.record_batch([pa.array(ids, pa.int32()), pa.array(names or [f"n{i}" for i in ids])], schema=SCHEMA)


class Env:
    """Per client: connection, admin, and the tables of one shared database."""

    def __init__(self, db):
        self.db = db
        self.conn = {}
        self.admin = {}
        self.tables = {}

    def path(self, mod, name):
        return mod.TablePath(self.db, name)


@pytest.fixture
async def env(fluss_server, unique_name):
    """A database with ``t`` (3 buckets, ids 0..3 all in bucket ``data_bucket``), ``e`` (2 empty
    buckets) and ``p`` (partitioned by ``s``, partition ``x``), and a connection of each client."""
    e = Env(unique_name("gaps"))
    for mod in MODS:
        e.conn[mod] = await call(mod.FlussConnection.create(_cfg(mod, fluss_server)))
        e.admin[mod] = e.conn[mod].get_admin()
    adm = e.admin[ff]
    await call(adm.create_database(e.db))
    await call(adm.create_table(e.path(ff, "t"), ff.TableDescriptor(ff.Schema(SCHEMA), bucket_count=3)))
    await call(adm.create_table(e.path(ff, "e"), ff.TableDescriptor(ff.Schema(SCHEMA), bucket_count=2)))
    await call(adm.create_table(e.path(ff, "p"), ff.TableDescriptor(ff.Schema(SCHEMA), partition_keys=["s"],
                                                                     bucket_count=2)))
    await call(adm.create_partition(e.path(ff, "p"), {"s": "x"}))
    # a Java cluster elects the leaders after CREATE_TABLE (CREATE_PARTITION) has answered, and
    # pyfluss gives up on a bucket without one ("No leader found"); fluss_fast's list_offsets waits
    await call(adm.list_offsets(e.path(ff, "e"), [0, 1], ff.OffsetSpec.latest()))
    await call(adm.list_partition_offsets(e.path(ff, "p"), "x", [0, 1], ff.OffsetSpec.latest()))
    t = await call(e.conn[ff].get_table(e.path(ff, "t")))
    w = t.new_append().create_writer()
    w.write_arrow_batch(_rows_batch([0, 1, 2, 3]))  # one batch: one bucket (sticky assigner)
    await call(w.flush())
    ends = await call(adm.list_offsets(e.path(ff, "t"), [0, 1, 2], ff.OffsetSpec.latest()))
    e.data_bucket = next(b for b, end in ends.items() if end)
    for mod in MODS:
        for name in ("t", "e", "p"):
            e.tables[(mod, name)] = await call(e.conn[mod].get_table(e.path(mod, name)))
    yield e
    await call(adm.drop_database(e.db, ignore_if_not_exists=True, cascade=True))
    for mod in MODS:
        await call(e.conn[mod].close())


async def both(env, fn):
    """``fn(mod, env)`` on pyfluss, then on fluss_fast."""
    return [await outcome(fn, mod, env) for mod in MODS]


# -- 1. context managers and close -------------------------------------------------------------------

async def test_sync_with_leaves_the_connection_usable(fluss_server, unique_name):
    for mod in MODS:
        conn = await call(mod.FlussConnection.create(_cfg(mod, fluss_server)))
        with conn as entered:
            assert entered is conn
        assert conn.__exit__(None, None, None) is False
        assert "fluss" in await call(conn.get_admin().list_databases()), mod.__name__
        with pytest.raises(mod.FlussError) as info:
            await call(conn.get_table(mod.TablePath("fluss", unique_name("none"))))
        # a real answer from the server, so the sockets are still open: GET_METADATA of a missing table is
        # -1 "Failed to get tables ..." from the Java server and the embedded one (pyfluss passes it on),
        # which fluss_fast's client reports as 7
        assert info.value.error_code in (7, -1) and "not exist" in str(info.value), info.value
        await call(conn.close())


async def _wait_for_leader(fluss_server, path):
    async with await call(ff.FlussConnection.create(_cfg(ff, fluss_server))) as conn:
        await call(conn.get_admin().list_offsets(path, [0], ff.OffsetSpec.latest()))


async def _count_rows(fluss_server, path):
    conn = await call(ff.FlussConnection.create(_cfg(ff, fluss_server)))
    try:
        table = await call(conn.get_table(path))
        sc = await call(table.new_scan().create_record_batch_log_scanner())
        sc.subscribe_buckets({b: ff.EARLIEST_OFFSET for b in range(table.get_table_info().num_buckets)})
        return sorted((await call(sc.to_arrow())).column("a").to_pylist())
    finally:
        await call(conn.close())


@pytest.mark.parametrize("how", ["async_with", "close", "close_not_awaited"])
async def test_close_delivers_what_the_writers_still_hold(fluss_server, unique_name, how):
    """pyfluss's close (and ``async with``'s exit) drains the writers: rows appended without a
    flush still reach the server, and their handles resolve."""
    db = "fluss"
    for mod in MODS:
        path = mod.TablePath(db, unique_name(f"drain_{mod.__name__}"))
        # a long linger: only the drain on close can send these rows in time
        conn = await call(mod.FlussConnection.create(_cfg(mod, fluss_server, **{"writer.batch-timeout-ms": "60000"})))
        await call(conn.get_admin().create_table(path, mod.TableDescriptor(mod.Schema(SCHEMA))))
        # on a Java cluster, pyfluss's close() left running (not awaited) never delivers nor fails
        # rows whose bucket had no leader yet: elected after CREATE_TABLE answered
        await _wait_for_leader(fluss_server, ff.TablePath(db, path.table_name))
        try:
            if how == "async_with":
                async with conn as c:
                    w = (await call(c.get_table(path))).new_append().create_writer()
                    handles = [w.append({"a": i, "s": "x"}) for i in range(5)]
            else:
                w = (await call(conn.get_table(path))).new_append().create_writer()
                handles = [w.append({"a": i, "s": "x"}) for i in range(5)]
                closing = conn.close()
                if how == "close":
                    await call(closing)
            for h in handles:
                await call(h.wait())
            assert await _count_rows(fluss_server, ff.TablePath(db, path.table_name)) == [0, 1, 2, 3, 4], mod
            # the drained writer refuses more rows, in both clients
            with pytest.raises(mod.FlussError) as info:
                w.append({"a": 9, "s": "late"})
                await call(w.flush())
            assert info.value.error_code == -2 and "closed" in str(info.value)
        finally:
            async with await call(ff.FlussConnection.create(_cfg(ff, fluss_server))) as admin_conn:
                await call(admin_conn.get_admin().drop_table(ff.TablePath(db, path.table_name)))
    # ours: the sockets are released too (pyfluss only drops them when the object goes away)
    for _ in range(500):
        if conn.closed:
            break
        await asyncio.sleep(0.01)
    assert conn.closed


async def test_async_with_keeps_the_body_exception(fluss_server):
    for mod in MODS:
        conn = await call(mod.FlussConnection.create(_cfg(mod, fluss_server)))
        with pytest.raises(KeyError):
            async with conn:
                raise KeyError("body")
        assert await conn.__aexit__(None, None, None) is False


# -- 2. list_offsets / list_partition_offsets ---------------------------------------------------------

async def test_list_offsets_of_a_bucket_the_table_lacks(env):
    async def go(mod, env):
        return await env.admin[mod].list_offsets(env.path(mod, "t"), [0, 7], mod.OffsetSpec.latest())
    theirs, ours = await both(env, go)
    assert_same_failure(theirs, ours, "No leader found for table bucket", "bucket=7")
    assert ours.code == -2

    async def go_partition(mod, env):
        return await env.admin[mod].list_partition_offsets(env.path(mod, "p"), "x", [5], mod.OffsetSpec.latest())
    theirs, ours = await both(env, go_partition)
    assert_same_failure(theirs, ours, "No leader found for table bucket", "bucket=5")


@pytest.mark.parametrize("table,partition", [("p", "nope"), ("t", "x")])
async def test_list_partition_offsets_of_a_missing_partition(env, table, partition):
    async def go(mod, env):
        return await env.admin[mod].list_partition_offsets(env.path(mod, table), partition, [0],
                                                           mod.OffsetSpec.latest())
    theirs, ours = await both(env, go)
    assert_same_failure(theirs, ours, "Table partition", f"({'p'}={partition})", "does not exist")
    assert ours.code == 36


# -- 3. the older stub's positional arguments and property names -------------------------------------

async def test_older_stub_positional_create_database(env, unique_name):
    adm = env.admin[ff]
    name = unique_name("olddb")
    try:
        await call(adm.create_database(name, False, ff.DatabaseDescriptor(comment="old order")))
        await call(adm.create_database(name, True))  # ignore_if_exists, positionally
        with pytest.raises(ff.FlussError) as info:
            await call(adm.create_database(name, False))
        assert info.value.error_code == ff.ErrorCode.DATABASE_ALREADY_EXIST
        # the database reads the same through pyfluss as one made with its own signature
        info_theirs = await call(env.admin[fluss].get_database_info(name))
        assert info_theirs.get_database_descriptor().comment == "old order"
        # the current order still works
        await call(adm.create_database(name, ff.DatabaseDescriptor(comment="x"), True))
        await call(adm.create_database(name, None, True))
        with pytest.raises(TypeError, match="database_descriptor"):
            await call(adm.create_database(name, "not a descriptor"))
    finally:
        await call(adm.drop_database(name, ignore_if_not_exists=True))


async def test_older_stub_positional_list_offsets(env):
    ts = 0
    theirs = await call(env.admin[fluss].list_offsets(env.path(fluss, "t"), [0, 1, 2], fluss.OffsetSpec.timestamp(ts)))
    adm = env.admin[ff]
    assert await call(adm.list_offsets(env.path(ff, "t"), [0, 1, 2], "timestamp", ts)) == theirs
    assert await call(adm.list_offsets(env.path(ff, "t"), [0, 1, 2], "latest")) == await call(
        env.admin[fluss].list_offsets(env.path(fluss, "t"), [0, 1, 2], fluss.OffsetSpec.latest()))
    assert await call(adm.list_partition_offsets(env.path(ff, "p"), "x", [0, 1], "timestamp", ts)) == await call(
        env.admin[fluss].list_partition_offsets(env.path(fluss, "p"), "x", [0, 1], fluss.OffsetSpec.timestamp(ts)))
    with pytest.raises(TypeError):
        await call(adm.list_offsets(env.path(ff, "t"), [0], ff.OffsetSpec.latest(), 5))


def test_older_stub_config_property_names():
    c = ff.Config({"bootstrap.servers": "h1:1", "writer.request-max-size": "4096"})
    assert c.bootstrap_server == c.bootstrap_servers == "h1:1"
    assert c.request_max_size == c.writer_request_max_size == 4096
    c.bootstrap_server = "h2:2"
    c.request_max_size = 8192
    assert (c.bootstrap_servers, c.writer_request_max_size) == ("h2:2", 8192)
    assert c == ff.Config({"bootstrap.servers": "h2:2", "writer.request-max-size": "8192"})
    # the aliases check values as the properties they stand for, as pyfluss's setters do
    theirs = fluss.Config()
    for bad in ("a", None, 1.5):
        with pytest.raises(TypeError) as t_info:
            theirs.writer_request_max_size = bad
        with pytest.raises(TypeError) as o_info:
            c.request_max_size = bad
        assert str(o_info.value).replace("'size'", "") == str(t_info.value).replace("'size'", "")
    with pytest.raises(TypeError):
        c.bootstrap_server = 5
    with pytest.raises(AttributeError):
        c.bootstrap_serverz = "x"


def test_config_setters_reject_wrong_types_like_pyfluss():
    props = [n for n in dir(fluss.Config) if not n.startswith("_")
             and inspect.isdatadescriptor(inspect.getattr_static(fluss.Config, n))]
    assert len(props) > 20
    for name in props:
        for bad in (None, 1.5, "7", True, -1):
            t = _sync_outcome(setattr, fluss.Config(), name, bad)
            o = _sync_outcome(setattr, ff.Config(), name, bad)
            assert (o.kind, o.message) == (t.kind, t.message), (name, bad, t, o)


# -- 4. bounded reads consume their subscriptions ------------------------------------------------------

@pytest.mark.parametrize("table", ["t", "e"])
@pytest.mark.parametrize("first", ["to_arrow", "to_pandas", "reader", "unread_reader"])
async def test_second_bounded_read_needs_a_new_subscribe(env, table, first):
    async def go(mod, env):
        t = env.tables[(mod, table)]
        n = t.get_table_info().num_buckets
        sc = await t.new_scan().create_record_batch_log_scanner()
        sc.subscribe_buckets({b: mod.EARLIEST_OFFSET for b in range(n)})
        if first == "to_arrow":
            got = (await sc.to_arrow()).num_rows
        elif first == "to_pandas":
            got = len(await sc.to_pandas())
        elif first == "reader":
            got = (await asyncio.to_thread(lambda: sc.to_arrow_batch_reader().read_all())).num_rows
        else:
            def drop_unread():
                reader = sc.to_arrow_batch_reader()
                del reader
                gc.collect()
            await asyncio.to_thread(drop_unread)
            got = None
        second = await outcome(sc.to_arrow)
        # polling an unsubscribed scanner is fine; a fresh subscribe reads everything again
        polled = (await sc.poll_arrow(100)).num_rows
        sc.subscribe_buckets({b: mod.EARLIEST_OFFSET for b in range(n)})
        again = (await sc.to_arrow()).num_rows
        return got, second, polled, again

    theirs, ours = await both(env, go)
    assert theirs.ok and ours.ok, (theirs, ours)
    t_got, t_second, t_polled, t_again = theirs.value
    o_got, o_second, o_polled, o_again = ours.value
    assert (o_got, o_polled, o_again) == (t_got, t_polled, t_again)
    assert_same_failure(t_second, o_second, "No buckets subscribed. Call subscribe() before creating a reader")


async def test_subscriptions_are_frozen_while_a_batch_reader_is_alive(env):
    async def go(mod, env):
        sc = await env.tables[(mod, "t")].new_scan().create_record_batch_log_scanner()
        sc.subscribe_buckets({0: mod.EARLIEST_OFFSET, 1: mod.EARLIEST_OFFSET, 2: mod.EARLIEST_OFFSET})

        def body():
            reader = sc.to_arrow_batch_reader()
            out = [repr(o) for o in (
                _sync_outcome(sc.subscribe, 2, mod.EARLIEST_OFFSET),
                _sync_outcome(sc.subscribe_buckets, {2: mod.EARLIEST_OFFSET}),
                _sync_outcome(sc.unsubscribe, 0))]
            out.append(reader.read_all().num_rows)
            del reader
            gc.collect()
            sc.subscribe(2, mod.EARLIEST_OFFSET)  # allowed again
            return out

        return await asyncio.to_thread(body)

    theirs, ours = await both(env, go)
    assert theirs.ok and ours.ok, (theirs, ours)
    assert theirs.value[-1] == ours.value[-1] == 4
    for t, o in zip(theirs.value[:-1], ours.value[:-1], strict=True):
        assert "Cannot modify subscriptions while a RecordBatchLogReader is active" in t
        assert o.replace("Fluss hitting illegal argument error ", "") == t.replace(
            "Fluss hitting illegal argument error ", "").replace("first..", "first.")


def _sync_outcome(fn, *args):
    try:
        return Outcome(fn(*args))
    except Exception as exc:  # noqa: BLE001
        return Outcome(exc=exc)


async def test_empty_results_have_the_same_shape(env):
    async def go(mod, env):
        t = env.tables[(mod, "e")]
        sc = await t.new_scan().create_record_batch_log_scanner()
        unsubscribed = await sc.poll_arrow(100)
        sc.subscribe_buckets({0: mod.EARLIEST_OFFSET, 1: mod.EARLIEST_OFFSET})
        polled = await sc.poll_arrow(200)
        bounded = await sc.to_arrow()
        return [(tb.schema, tb.num_rows, len(tb.to_batches())) for tb in (unsubscribed, polled, bounded)]

    theirs, ours = await both(env, go)
    assert theirs.ok and ours.ok, (theirs, ours)
    assert ours.value == theirs.value


# -- 5. ScanRecords only answers about TableBuckets -------------------------------------------------------

async def test_scan_records_membership_and_lookup_types(env):
    async def go(mod, env):
        t = env.tables[(mod, "t")]
        sc = await t.new_scan().create_log_scanner()
        sc.subscribe_buckets({0: mod.EARLIEST_OFFSET, 1: mod.EARLIEST_OFFSET, 2: mod.EARLIEST_OFFSET})
        recs = await sc.poll(2000)
        for _ in range(10):
            if recs.count():
                break
            recs = await sc.poll(500)
        tid = t.get_table_info().table_id
        out = []
        for probe in (0, None, "x", (0, 1), 1.5):
            out.append(repr(_sync_outcome(lambda p: p in recs, probe)))
            out.append(repr(_sync_outcome(recs.records, probe)))
        full, empty = env.data_bucket, (env.data_bucket + 1) % 3
        out.append(mod.TableBucket(tid, full) in recs)
        out.append(mod.TableBucket(tid, empty) in recs)
        out.append([repr(r) for r in recs.records(mod.TableBucket(tid, full))])
        out.append(recs.records(mod.TableBucket(tid, empty)))
        return out

    theirs, ours = await both(env, go)
    assert theirs.ok and ours.ok, (theirs, ours)
    assert ours.value == theirs.value
    assert "TypeError" in ours.value[0] and "not an instance of 'TableBucket'" in ours.value[0]


# -- 6. WriteResultHandle --------------------------------------------------------------------------------

async def _handle_story(mod, env):
    w = env.tables[(mod, "e")].new_append().create_writer()
    h = w.append({"a": 1, "s": "h"})
    story = [repr(h)]
    await w.flush()
    story.append(repr(h))  # acknowledged, but not waited for yet
    waiting = h.wait()
    story.append(repr(h))  # consumed by calling wait(), before it is awaited
    second = _sync_outcome(h.wait)  # raised by the call itself, not when awaited
    if second.ok and asyncio.iscoroutine(second.value):
        second.value.close()
    story.append((second.kind, second.code, second.message.replace("FlussError: ", "")))
    await waiting
    story.append(repr(h))
    return story


async def test_write_result_handle_story_pyfluss(env):
    theirs = await _handle_story(fluss, env)
    assert theirs == ["WriteResultHandle(pending)", "WriteResultHandle(pending)", "WriteResultHandle(consumed)",
                      ("FlussError", -2, "WriteResultHandle already consumed"), "WriteResultHandle(consumed)"]


async def test_write_result_handle_may_be_awaited_again(env):
    """A deliberate difference: fluss_fast shares one handle between the rows of a batch (no object per
    row on the append path), so a handle cannot be "consumed" by one wait(); waiting again is allowed and
    the repr tells pending from done instead of pending from consumed."""
    w = env.tables[(ff, "e")].new_append().create_writer()
    h = w.append({"a": 1, "s": "h"})
    assert repr(h) in ("WriteResultHandle(pending)", "WriteResultHandle(done)")
    await h.wait()
    await h.wait()
    assert repr(h) == "WriteResultHandle(done)" and h.done


# -- 7. the same calls, the same failures ---------------------------------------------------------------

def _admin_call(method, *args_of):
    async def go(mod, env):
        return await getattr(env.admin[mod], method)(*[a(mod, env) for a in args_of])
    return go


P = lambda name: (lambda mod, env: env.path(mod, name))  # noqa: E731
V = lambda value: (lambda mod, env: value)  # noqa: E731
DB = lambda mod, env: env.db  # noqa: E731
NO_DB = lambda mod, env: mod.TablePath("no_such_db_gaps", "t")  # noqa: E731
DESC = lambda mod, env: mod.TableDescriptor(mod.Schema(SCHEMA))  # noqa: E731

ADMIN_FAILURES = {
    "get_table_info unknown table": (_admin_call("get_table_info", P("nope")), ["Table", "nope", "does not exist"]),
    "get_table_info unknown db": (_admin_call("get_table_info", NO_DB), ["does not exist"]),
    "drop_table unknown table": (_admin_call("drop_table", P("nope")), ["nope", "does not exist"]),
    "drop_table unknown db": (_admin_call("drop_table", NO_DB), ["does not exist"]),
    "list_tables unknown db": (_admin_call("list_tables", V("no_such_db_gaps")),
                               ["Database no_such_db_gaps does not exist"]),
    "get_database_info unknown": (_admin_call("get_database_info", V("no_such_db_gaps")),
                                  ["Database 'no_such_db_gaps' does not exist"]),
    "drop_database unknown": (_admin_call("drop_database", V("no_such_db_gaps")),
                              ["Database no_such_db_gaps does not exist"]),
    "create_table in unknown db": (_admin_call("create_table", NO_DB, DESC),
                                   ["Database no_such_db_gaps does not exist"]),
    "create_database duplicate": (_admin_call("create_database", DB), ["already exists"]),
    "create_table duplicate": (_admin_call("create_table", P("t"), DESC), ["already exists"]),
    "create_partition non-partitioned": (_admin_call("create_partition", P("t"), V({"a": "1"})),
                                         ["Only partitioned table support create partition"]),
    "drop_partition non-partitioned": (_admin_call("drop_partition", P("t"), V({"a": "1"})),
                                       ["Only partitioned table support drop partition"]),
    "list_partition_infos non-partitioned": (_admin_call("list_partition_infos", P("t")),
                                             ["is not a partitioned table"]),
    "create_partition bad key": (_admin_call("create_partition", P("p"), V({"zz": "1"})),
                                 ["does not contain partition key 's'"]),
    "drop_partition unknown": (_admin_call("drop_partition", P("p"), V({"s": "zz"})),
                               ["Partition 's=zz' does not exist"]),
    "list_offsets unknown table": (
        lambda mod, env: env.admin[mod].list_offsets(env.path(mod, "nope"), [0], mod.OffsetSpec.latest()),
        ["Table", "nope", "does not exist"]),
    "list_offsets negative bucket": (
        lambda mod, env: env.admin[mod].list_offsets(env.path(mod, "t"), [-1], mod.OffsetSpec.latest()),
        ["Invalid bucket_id: -1"]),
    "list_offsets no buckets": (
        lambda mod, env: env.admin[mod].list_offsets(env.path(mod, "t"), [], mod.OffsetSpec.latest()),
        ["Buckets are empty"]),
    "get_table unknown table": (lambda mod, env: env.conn[mod].get_table(env.path(mod, "nope")),
                                ["Table", "nope", "does not exist"]),
    "get_table unknown db": (lambda mod, env: env.conn[mod].get_table(NO_DB(mod, env)), ["does not exist"]),
}


# A deliberate difference: GET_METADATA of a missing table is -1 "Failed to get tables '[db.t]'" from the
# Java server (a FlussRuntimeException wrapping the TableNotExistException, with the Java stack trace) and
# from the embedded one, which answers as Java does (tests/conformance/test_differential.py). pyfluss
# passes the -1 on; fluss_fast (client/cluster.py, _fetch_table) reports the cause, 7 TABLE_NOT_EXIST,
# the code GET_TABLE_INFO, DROP_TABLE and the rest give for a missing table: code that handles a missing
# table by its code works whichever call found out.
MORE_PRECISE = {"get_table unknown table", "get_table unknown db", "list_offsets unknown table"}


@pytest.mark.parametrize("name", sorted(ADMIN_FAILURES))
async def test_admin_failures_match(env, name):
    fn, words = ADMIN_FAILURES[name]
    theirs, ours = await both(env, fn)
    if name in MORE_PRECISE:
        assert (theirs.kind, theirs.code) == ("FlussError", -1) and "Failed to get tables" in theirs.message, theirs
        assert (ours.kind, ours.code) == ("FlussError", ff.ErrorCode.TABLE_NOT_EXIST), (theirs, ours)
        for word in words:
            assert word.lower() in theirs.message.lower(), (word, theirs)
            assert word.lower() in ours.message.lower(), (word, ours)
        return
    assert_same_failure(theirs, ours, *words)


async def _scanner(mod, env, table="t", kind="batch", build=None):
    scan = env.tables[(mod, table)].new_scan()
    if build is not None:
        scan = build(scan)
    if kind == "batch":
        return await scan.create_record_batch_log_scanner()
    return await scan.create_log_scanner()


async def test_subscribing_a_bucket_the_table_lacks(env):
    async def go(mod, env):
        sc = await _scanner(mod, env)
        sc.subscribe_buckets({0: mod.EARLIEST_OFFSET, 1: mod.EARLIEST_OFFSET, 2: mod.EARLIEST_OFFSET,
                              9: mod.EARLIEST_OFFSET})
        sc.subscribe(-1, mod.EARLIEST_OFFSET)
        rows = 0
        for _ in range(6):
            rows += (await sc.poll_arrow(300)).num_rows
        bounded = [await outcome(sc.to_arrow), await outcome(sc.to_arrow)]
        return rows, bounded

    theirs, ours = await both(env, go)
    assert theirs.ok and ours.ok, (theirs, ours)
    assert theirs.value[0] == ours.value[0] == 4  # the real buckets still deliver
    for t, o in zip(theirs.value[1], ours.value[1], strict=True):  # a bounded read refuses, and keeps the subscriptions
        assert_same_failure(t, o, "Bounded read bucket id", "is out of range for a table with 3 buckets")


@pytest.mark.parametrize("offset", [-5, 1000])
async def test_subscribing_at_an_offset_the_log_lacks(env, offset):
    async def go(mod, env):
        sc = await _scanner(mod, env, kind="record")
        sc.subscribe(0, offset)
        for _ in range(20):
            await sc.poll(200)
        return "no error"

    theirs, ours = await both(env, go)
    assert_same_failure(theirs, ours, f"The fetching offset {offset} is out of range")


async def test_polling_without_subscriptions(env):
    async def go(mod, env):
        rec = await _scanner(mod, env, kind="record")
        bat = await _scanner(mod, env)
        records = await rec.poll(100)
        return (records.count(), len(records), await bat.poll_record_batch(100),
                (await bat.poll_arrow(100)).num_rows, repr(await outcome(bat.to_arrow)).replace(
                    "Fluss hitting illegal argument error ", "").replace("reader..", "reader."))

    theirs, ours = await both(env, go)
    assert theirs.ok and ours.ok, (theirs, ours)
    assert ours.value == theirs.value


SCAN_FAILURES = {
    "project index out of range": (lambda scan: scan.project([5]), "record",
                                   ["Column index 5 out of range (max: 1)"]),
    "project no indices": (lambda scan: scan.project([]), "record", ["Column indices cannot be empty"]),
    "project unknown name": (lambda scan: scan.project_by_name(["zz"]), "batch", ["Column 'zz' not found"]),
    "project no names": (lambda scan: scan.project_by_name([]), "batch", ["Column names cannot be empty"]),
    "limit on a log scanner": (lambda scan: scan.limit(5), "record", ["don't support limit pushdown"]),
}


@pytest.mark.parametrize("name", sorted(SCAN_FAILURES))
async def test_scan_builder_failures_match(env, name):
    build, kind, words = SCAN_FAILURES[name]

    async def go(mod, env):
        return await _scanner(mod, env, kind=kind, build=build)

    theirs, ours = await both(env, go)
    assert_same_failure(theirs, ours, *words)


async def test_negative_projection_index(env):
    theirs, ours = await both(env, lambda mod, env: env.tables[(mod, "t")].new_scan().project([-1]))
    assert (ours.kind, ours.message) == (theirs.kind, theirs.message) == ("OverflowError",
                                                                          "can't convert negative int to unsigned")


LIMIT_FAILURES = {
    "bucket out of range": (lambda mod, tid: mod.TableBucket(tid, 9), 10,
                            ["Bucket id 9 out of range for table with 3 buckets"]),
    "other table's bucket": (lambda mod, tid: mod.TableBucket(tid + 100000, 0), 10,
                             ["does not match scan table_id"]),
    "no limit": (lambda mod, tid: mod.TableBucket(tid, 0), None, ["requires a limit set via .limit(n)"]),
    "zero limit": (lambda mod, tid: mod.TableBucket(tid, 0), 0, ["Scan limit must be positive, got 0"]),
}


@pytest.mark.parametrize("name", sorted(LIMIT_FAILURES))
async def test_limit_scan_failures_match(env, name):
    make_bucket, limit, words = LIMIT_FAILURES[name]

    async def go(mod, env):
        t = env.tables[(mod, "t")]
        scan = t.new_scan()
        if limit is not None:
            scan = scan.limit(limit)
        return await scan.create_bucket_batch_scanner(make_bucket(mod, t.get_table_info().table_id)).to_arrow()

    theirs, ours = await both(env, go)
    assert_same_failure(theirs, ours, *words)


APPEND_FAILURES = {
    "str for int": ({"a": "x", "s": "y"}, ["'a'", "str"]),
    "str for int, by position": (["1", "y"], ["'a'", "str"]),
    "float for int": ({"a": 1.5, "s": "x"}, ["'a'", "float"]),
    "bool for int": ((True, "x"), ["'a'", "bool", "Use 0 or 1 explicitly"]),
    "int overflow": ([2 ** 40, "x"], ["'a'", "out of range"]),
    "too few values": ([1], ["Expected 2", "got 1"]),
    "too many values": ([1, "a", 3], ["Expected 2", "got 3"]),
    "unknown field": ({"zz": 1}, ["Unknown", "'zz'", "Expected: a, s"]),
    "not a row": (5, ["must be a dict, list", "tuple", "int"]),
    "None row": (None, ["must be a dict, list", "tuple", "NoneType"]),
}


@pytest.mark.parametrize("name", sorted(APPEND_FAILURES))
async def test_append_failures_match(env, name):
    row, words = APPEND_FAILURES[name]

    async def go(mod, env):
        w = env.tables[(mod, "e")].new_append().create_writer()
        w.append(row)
        await w.flush()

    theirs, ours = await both(env, go)
    assert_same_failure(theirs, ours, *words)


ARROW_FAILURES = {
    "missing column": (pa.record_batch([pa.array([1], pa.int32())], names=["a"]), ["has 1 columns", "table has 2"]),
    "wrong type": (pa.record_batch([pa.array(["x"]), pa.array(["y"])], names=["a", "s"]), ["'a'", "Arrow type"]),
}


@pytest.mark.parametrize("name", sorted(ARROW_FAILURES))
async def test_write_arrow_batch_failures_match(env, name):
    batch, words = ARROW_FAILURES[name]

    async def go(mod, env):
        w = env.tables[(mod, "e")].new_append().create_writer()
        w.write_arrow_batch(batch)
        await w.flush()

    theirs, ours = await both(env, go)
    assert_same_failure(theirs, ours, *words)


async def test_subscribe_mismatches_match(env):
    async def go(mod, env):
        plain = await _scanner(mod, env, kind="record")
        parted = await _scanner(mod, env, table="p", kind="record")
        return [_sync_outcome(fn, *args)
                for fn, args in ((plain.subscribe_partition, (1, 0, 0)), (parted.subscribe, (0, 0)),
                                 (parted.subscribe_buckets, ({0: 0},)), (plain.unsubscribe_partition, (1, 0)),
                                 (parted.unsubscribe, (0,)), (plain.subscribe_buckets, ({},)))]

    theirs, ours = await both(env, go)
    assert theirs.ok and ours.ok, (theirs, ours)
    words = ['please use "subscribe" to subscribe a non-partitioned bucket instead',
             'please use "subscribe_partition" to subscribe a partitioned bucket instead',
             'please use "subscribe_partition_buckets" instead',
             "Can't unsubscribe a partition for a non-partitioned table",
             'please use "unsubscribe_partition" to unsubscribe a partitioned bucket instead',
             "Bucket offsets are empty"]
    for t, o, w in zip(theirs.value, ours.value, words, strict=True):
        assert_same_failure(t, o, w)


async def test_limit_scan_of_an_empty_bucket_has_the_same_shape(env):
    async def go(mod, env):
        t = env.tables[(mod, "e")]
        tid = t.get_table_info().table_id
        make = lambda: t.new_scan().limit(5).create_bucket_batch_scanner(mod.TableBucket(tid, 0))  # noqa: E731
        tbl = await make().to_arrow()
        first = await make().next_batch()
        spent = make()
        batches = await spent.collect_all_batches()
        return ((tbl.schema, tbl.num_rows, len(tbl.to_batches())),
                None if first is None else (first.batch.num_rows, first.base_offset, first.last_offset),
                [(b.batch.num_rows, b.base_offset, b.last_offset) for b in batches],
                await spent.next_batch())

    theirs, ours = await both(env, go)
    assert theirs.ok and ours.ok, (theirs, ours)
    assert ours.value == theirs.value


async def test_subscribing_a_partition_that_does_not_exist(env):
    async def go(mod, env):
        sc = await _scanner(mod, env, table="p")
        sc.subscribe_partition(987654, 0, mod.EARLIEST_OFFSET)
        return (await sc.poll_arrow(1000)).num_rows

    theirs, ours = await both(env, go)
    assert_same_failure(theirs, ours, "Partition", "987654", "does not exist")
