"""The public surface of fluss_fast against pyfluss 1.0.0, introspected at runtime (and its stub file),
plus the bytes pyfluss puts on the wire for CREATE_TABLE / CREATE_DATABASE next to ours."""
from __future__ import annotations

import ast
import asyncio
import inspect
import json
import os
import struct

import pyarrow as pa
import pytest

import fluss_fast
import fluss_fast.rpc.fluss_api_pb2 as pb
from fluss_fast.rpc import frame
from fluss_fast.rpc.api import API_KEYS, Api, request_class

fluss = pytest.importorskip("fluss")
pytestmark = pytest.mark.compat

PUBLIC = [n for n in dir(fluss) if not n.startswith("_")]


def _kind(obj):
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "function"
    return type(obj).__name__


def _stub_async_methods():
    """{class: {async method names}} from pyfluss's own .pyi."""
    path = os.path.join(os.path.dirname(fluss.__file__), "__init__.pyi")
    with open(path) as f:
        tree = ast.parse(f.read())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            out[node.name] = {f.name for f in node.body if isinstance(f, ast.AsyncFunctionDef)}
    return out


def test_every_public_name_exists_with_the_same_kind():
    missing = [n for n in PUBLIC if not hasattr(fluss_fast, n)]
    assert not missing
    wrong = [(n, _kind(getattr(fluss, n)), _kind(getattr(fluss_fast, n))) for n in PUBLIC
             if _kind(getattr(fluss, n)) != _kind(getattr(fluss_fast, n))]
    assert not wrong
    assert fluss_fast.EARLIEST_OFFSET == fluss.EARLIEST_OFFSET == -2
    assert fluss_fast.LATEST_OFFSET == -1
    assert isinstance(fluss_fast.__version__, str)


def test_nothing_else_leaks():
    extras = {"LATEST_OFFSET", "sync", "server"}
    assert set(n for n in dir(fluss_fast) if not n.startswith("_")) == set(PUBLIC) | extras
    assert set(fluss_fast.__all__) == set(PUBLIC) | extras


@pytest.mark.parametrize("name", [n for n in PUBLIC if inspect.isclass(getattr(fluss, n))])
def test_every_member_of_every_class_exists(name):
    theirs, ours = getattr(fluss, name), getattr(fluss_fast, name)
    members = [m for m in dir(theirs) if not m.startswith("_")]
    dunders = [m for m in ("__aenter__", "__aexit__", "__enter__", "__exit__", "__aiter__", "__iter__", "__len__",
                           "__getitem__", "__contains__", "__await__") if hasattr(theirs, m)]
    missing = [m for m in members + dunders if not hasattr(ours, m)]
    assert not missing, f"{name} lacks {missing}"


@pytest.mark.parametrize("name", sorted(_stub_async_methods()))
def test_async_methods_are_awaitable(name):
    ours = getattr(fluss_fast, name, None)
    if ours is None or not inspect.isclass(ours):
        pytest.skip(f"{name} is not a class in fluss_fast")
    not_async = []
    for method in _stub_async_methods()[name]:
        attr = inspect.getattr_static(ours, method, None)
        fn = attr.__func__ if isinstance(attr, (staticmethod, classmethod)) else attr
        if fn is None:
            not_async.append(f"{method} (missing)")
        elif not (inspect.iscoroutinefunction(fn) or hasattr(fn, "__runtime_impl__")):
            not_async.append(method)
    assert not not_async, f"{name}: not async: {not_async}"


def test_error_codes_equal():
    names = [n for n in dir(fluss.ErrorCode) if n.isupper()]
    assert names
    for n in names:
        assert getattr(fluss_fast.ErrorCode, n) == getattr(fluss.ErrorCode, n), n


def test_flusserror_shape():
    for mod in (fluss, fluss_fast):
        e = mod.FlussError("boom", 7)
        assert (e.message, e.error_code) == ("boom", 7)
    assert str(fluss_fast.FlussError("boom", 7)) == str(fluss.FlussError("boom", 7))
    assert str(fluss_fast.FlussError("boom")) == str(fluss.FlussError("boom"))
    assert fluss_fast.FlussError("x", 1).is_retriable == fluss.FlussError("x", 1).is_retriable


def test_repr_of_connection_objects():
    assert fluss_fast.FlussAdmin.__repr__(object.__new__(fluss_fast.FlussAdmin)) == "FlussAdmin()"


# -- wire bytes next to pyfluss's ----------------------------------------------------------------------

class _Recorder:
    """Answers just enough for a client to connect and run admin calls; keeps every request."""

    def __init__(self):
        self.requests = []
        self.tasks = []
        self.writers = []

    async def start(self):
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def _serve(self, reader, writer):
        self.tasks.append(asyncio.current_task())
        self.writers.append(writer)
        try:
            while True:
                n = struct.unpack(">i", await reader.readexactly(4))[0]
                body = await reader.readexactly(n)
                key, _v, rid = struct.unpack_from(">hhi", body)
                req = request_class(key)()
                req.ParseFromString(body[8:])
                self.requests.append((key, req))
                if key == Api.API_VERSIONS:
                    resp = pb.ApiVersionsResponse(server_type=1)
                    for k, info in API_KEYS.items():
                        v = resp.api_versions.add()
                        v.api_key, v.min_version, v.max_version = k, 0, info.max_version
                elif key == Api.GET_METADATA:
                    resp = pb.MetadataResponse()
                    c = resp.coordinator_server
                    c.node_id, c.host, c.port = 0, "127.0.0.1", self.port
                    t = resp.tablet_servers.add()
                    t.node_id, t.host, t.port = 0, "127.0.0.1", self.port
                else:
                    from fluss_fast.rpc.api import response_class

                    resp = response_class(key)()
                    if key in (Api.TABLE_EXISTS, Api.DATABASE_EXISTS):
                        # pyfluss sometimes asks around a create; the answer's one field is required
                        resp.exists = False
                writer.write(frame.encode_response(rid, resp.SerializeToString()))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def bodies(self, key):
        return [r for k, r in self.requests if k == key]

    async def close(self):
        # pyfluss's close() leaves its sockets open (docs/guide/differences.md), so close our ends;
        # each handler then returns.
        self.server.close()
        for w in self.writers:
            w.close()
        await asyncio.wait_for(asyncio.gather(*self.tasks), 5)


def _descriptors(mod):
    sc = pa.schema([pa.field("id", pa.int32()), pa.field("region", pa.string()), pa.field("v", pa.int64()),
                    pa.field("ts", pa.timestamp("ms", tz="UTC")), pa.field("d", pa.decimal128(12, 3)),
                    pa.field("tags", pa.list_(pa.string())), pa.field("attrs", pa.map_(pa.string(), pa.int64())),
                    pa.field("nested", pa.struct([("a", pa.int8()), ("b", pa.struct([("c", pa.string())]))]))])
    return [
        mod.TableDescriptor(mod.Schema(sc)),
        mod.TableDescriptor(mod.Schema(sc), bucket_count=4, bucket_keys=["id"], comment="c",
                            properties={"table.replication.factor": "1"}, custom_properties={"k": "v"}),
        mod.TableDescriptor(mod.Schema(sc, primary_keys=["id", "region"]), partition_keys=["region"],
                            bucket_count=2, log_format="indexed", kv_format="compacted"),
        mod.TableDescriptor(mod.Schema(sc), log_format="Arrow", partition_keys=["region"]),
    ]


async def test_create_table_and_database_bytes_match_pyfluss():
    captured = {}
    for mod in (fluss, fluss_fast):
        rec = await _Recorder().start()
        conn = await mod.FlussConnection.create(mod.Config({"bootstrap.servers": f"127.0.0.1:{rec.port}"}))
        admin = conn.get_admin()
        for i, desc in enumerate(_descriptors(mod)):
            await admin.create_table(mod.TablePath("db", f"t{i}"), desc, ignore_if_exists=bool(i % 2))
        await admin.create_database("d1")
        await admin.create_database("d2", mod.DatabaseDescriptor("cm", {"a": "b"}), ignore_if_exists=True)
        await admin.create_partition(mod.TablePath("db", "t3"), {"region": "US"}, ignore_if_exists=True)
        await conn.close()
        await rec.close()
        captured[mod.__name__] = rec
    theirs, ours = captured["fluss"], captured["fluss_fast"]
    t_tables, o_tables = theirs.bodies(Api.CREATE_TABLE), ours.bodies(Api.CREATE_TABLE)
    assert len(t_tables) == len(o_tables) == 4
    for t, o in zip(t_tables, o_tables, strict=True):
        assert json.loads(o.table_json) == json.loads(t.table_json)
        assert o.ignore_if_exists == t.ignore_if_exists and o.table_path == t.table_path
    t_dbs, o_dbs = theirs.bodies(Api.CREATE_DATABASE), ours.bodies(Api.CREATE_DATABASE)
    for t, o in zip(t_dbs, o_dbs, strict=True):
        assert (o.database_name, o.ignore_if_exists) == (t.database_name, t.ignore_if_exists)
        tj = json.loads(t.database_json) if t.HasField("database_json") else {"version": 1, "custom_properties": {}}
        assert json.loads(o.database_json) == tj
    t_parts, o_parts = theirs.bodies(Api.CREATE_PARTITION), ours.bodies(Api.CREATE_PARTITION)
    assert [p.SerializeToString() for p in o_parts] == [p.SerializeToString() for p in t_parts]


def test_primary_key_surface_and_extras():
    # pyfluss's KV names are all there (the generic checks above cover them; this keeps the list
    # readable), and the fluss_fast extras the Spark sink and the docs rely on keep their names
    kv = {"TableUpsert": ["partial_update_by_name", "partial_update_by_index", "create_writer"],
          "UpsertWriter": ["upsert", "delete", "flush", "__aenter__", "__aexit__"],
          "TableLookup": ["create_lookuper", "lookup_by"], "TablePrefixLookup": ["create_lookuper"],
          "Lookuper": ["lookup"], "PrefixLookuper": ["lookup"],
          "ChangeType": ["Insert", "UpdateBefore", "UpdateAfter", "Delete", "AppendOnly"]}
    for cls, members in kv.items():
        for m in members:
            assert hasattr(getattr(fluss, cls), m), (cls, m)
            assert hasattr(getattr(fluss_fast, cls), m), (cls, m)
    assert inspect.iscoroutinefunction(fluss_fast.Lookuper.lookup)
    assert inspect.iscoroutinefunction(fluss_fast.PrefixLookuper.lookup)
    assert inspect.iscoroutinefunction(fluss_fast.UpsertWriter.flush)
    for extra in ("upsert_arrow", "upsert_arrow_batch", "upsert_pandas", "delete_arrow",
                  "delete_arrow_batch", "delete_pandas"):
        assert callable(getattr(fluss_fast.UpsertWriter, extra))
        assert not inspect.iscoroutinefunction(getattr(fluss_fast.UpsertWriter, extra))
    from fluss_fast.client.table import _TableScan
    assert inspect.iscoroutinefunction(_TableScan.create_snapshot_scanner)  # new_scan()'s class
    from fluss_fast.client.snapshot import SnapshotScanner
    assert hasattr(SnapshotScanner.to_arrow, "__runtime_impl__")
    assert hasattr(SnapshotScanner.to_pandas, "__runtime_impl__")
