"""Primary-key and prefix lookups: ``Lookuper``, ``PrefixLookuper`` and the batching behind them.

Lookups made at the same time are sent together, as the Java client's LookupQueue / LookupSender
do: every lookup queues its key on the runtime loop, and one drain per loop turn groups the
queued keys by leader (and table) into a single LOOKUP or PREFIX_LOOKUP request, so 64
concurrent lookups cost a few round trips (one, when a caller's loop starts them in one turn: the
runtime hands them over together, see ``runtime._CallerLink``). Requests to different leaders, and successive
requests, are in flight together up to ``client.lookup.max-inflight-requests``.

Answers are shaped as pyfluss returns them: a dict by column name (None when the key is absent,
or its partition does not exist), and for prefix lookups a list of such dicts.
"""
from __future__ import annotations

import asyncio
import time

from .. import error_codes as codes
from ..codec.rows.compacted import CompactedRowDecoder
from ..codec.rows.indexed import IndexedRowDecoder
from ..errors import FlussError
from ..rpc import fluss_api_pb2 as pb
from ..rpc.api import Api
from .metrics import metrics_of
from .runtime import on_runtime
from .write.upsert import KvLayout, RowShaper, illegal_argument

PARTITION_NOT_EXISTS = codes.Errors.PARTITION_NOT_EXISTS
_RETRY_CODES = codes.REFRESH_METADATA_CODES  # the leader moved or is unknown: ask again
_MAX_KEYS_PER_REQUEST = 128
_MAX_INFLIGHT = 128


class _Pending:
    __slots__ = ("table_id", "partition_id", "bucket", "key", "future", "prefix", "attempts", "deadline",
                 "insert")

    def __init__(self, table_id, partition_id, bucket, key, future, prefix, deadline, insert=False):
        self.table_id = table_id
        self.partition_id = partition_id
        self.bucket = bucket
        self.key = key
        self.future = future
        self.prefix = prefix
        self.attempts = 0
        # A lookup is retried while its leader moves (a tablet server died, ZooKeeper has yet to
        # notice, a new leader is being elected) but never past the connection's request timeout.
        self.deadline = deadline
        self.insert = insert


class LookupClient:
    """One per connection, on the runtime loop: queues lookups and sends them in batches."""

    def __init__(self, ctx):
        self._ctx = ctx
        self._queue: list[_Pending] = []
        self._scheduled = False
        self._slots = None
        self.requests_sent = 0

    @staticmethod
    def of(ctx) -> LookupClient:
        client = getattr(ctx, "_lookup_client", None)
        if client is None:
            client = LookupClient(ctx)
            ctx._lookup_client = client
        return client

    def submit(self, table_id, partition_id, bucket, key: bytes, prefix: bool,
               insert: bool = False) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        timeout_ms = self._ctx.request_timeout_ms
        deadline = loop.time() + timeout_ms / 1000 if timeout_ms else float("inf")
        self._queue.append(_Pending(table_id, partition_id, bucket, key, fut, prefix, deadline, insert))
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._drain)
        return fut

    def _drain(self) -> None:
        self._scheduled = False
        queue, self._queue = self._queue, []
        md = self._ctx.metadata
        groups: dict[tuple, list[_Pending]] = {}
        unknown = []
        for p in queue:
            if p.future.done():
                continue
            node = md.leader(p.table_id, p.partition_id, p.bucket)
            if node is None:
                unknown.append(p)
                continue
            # the insert flag is per request, so inserting and plain lookups travel apart (as in Java)
            groups.setdefault((node, p.table_id, p.prefix, p.insert), []).append(p)
        for (node, table_id, prefix, insert), items in groups.items():
            for i in range(0, len(items), _MAX_KEYS_PER_REQUEST):
                self._spawn(self._send(node, table_id, prefix, items[i:i + _MAX_KEYS_PER_REQUEST], insert))
        for p in unknown:
            self._spawn(self._find_leader(p))

    def _spawn(self, coro) -> None:
        t = asyncio.ensure_future(coro)
        register = getattr(self._ctx, "register_task", None)
        if register is not None:
            register(t)

    async def _find_leader(self, p: _Pending) -> None:
        try:
            await self._ctx.metadata.leader_for(p.table_id, p.partition_id, p.bucket, deadline=p.deadline)
        except FlussError as e:
            self._failed(p, e.error_code, e.message)
            return
        except Exception as e:  # noqa: BLE001 - reach the caller, never the loop
            if not p.future.done():
                metrics_of(self._ctx).lookup(p.table_id).errors += 1
                p.future.set_exception(FlussError(f"lookup failed: {e!r}"))
            return
        self._requeue(p)

    def _requeue(self, p: _Pending) -> None:
        self._queue.append(p)
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._drain)

    async def _send(self, node, table_id, prefix, items: list[_Pending], insert: bool = False) -> None:
        if self._slots is None:
            self._slots = asyncio.Semaphore(_MAX_INFLIGHT)
        by_bucket: dict[tuple, list[_Pending]] = {}
        for p in items:
            by_bucket.setdefault((p.partition_id, p.bucket), []).append(p)
        req = pb.PrefixLookupRequest() if prefix else pb.LookupRequest()
        req.table_id = table_id
        if insert:
            # the server writes the missing rows, so it needs the writer's acks and a deadline
            req.insert_if_not_exists = True
            req.acks = self._insert_acks()
            req.timeout_ms = min(int(self._ctx.request_timeout_ms or 30000), (1 << 31) - 1)
        order = []
        for (pid, bucket), ps in by_bucket.items():
            b = req.buckets_req.add()
            if pid is not None:
                b.partition_id = pid
            b.bucket_id = bucket
            b.keys.extend([p.key for p in ps])
            order.append(((pid, bucket), ps))
        m = metrics_of(self._ctx).lookup(table_id)
        try:
            async with self._slots:
                self.requests_sent += 1
                m.requests += 1
                m.keys += len(items)
                sent_at = time.monotonic()
                resp = await self._ctx.tablet(node, Api.PREFIX_LOOKUP if prefix else Api.LOOKUP, req)
                m.latency.record(time.monotonic() - sent_at)
        except FlussError as e:
            for p in items:
                self._failed(p, e.error_code, e.message)
            return
        except asyncio.CancelledError:
            for p in items:
                if not p.future.done():
                    p.future.set_exception(FlussError("the lookup was cancelled (connection closed)"))
            raise
        except Exception as e:  # noqa: BLE001
            for p in items:
                self._failed(p, codes.Errors.NETWORK_EXCEPTION, repr(e))
            return
        answers = {}
        for r in resp.buckets_resp:
            pid = r.partition_id if r.HasField("partition_id") else None
            answers[(pid, r.bucket_id)] = r
        for key, ps in order:
            r = answers.get(key)
            if r is None:
                for p in ps:
                    self._failed(p, -1, "the server's answer has no entry for this bucket")
                continue
            code = r.error_code if r.HasField("error_code") else 0
            if code:
                for p in ps:
                    self._failed(p, code, r.error_message if r.HasField("error_message") else None)
                continue
            if prefix:
                lists = r.value_lists
                for i, p in enumerate(ps):
                    if not p.future.done():
                        p.future.set_result(list(lists[i].values) if i < len(lists) else [])
            else:
                values = r.values
                for i, p in enumerate(ps):
                    if not p.future.done():
                        v = values[i] if i < len(values) else None
                        p.future.set_result(v.values if v is not None and v.HasField("values") else None)

    def _insert_acks(self) -> int:
        from .write.pipeline import parse_acks
        try:
            return parse_acks(self._ctx.config.writer_acks)
        except (FlussError, AttributeError):
            return -1

    def _failed(self, p: _Pending, code: int, message: str | None) -> None:
        if p.future.done():
            return
        p.attempts += 1
        if code in _RETRY_CODES and asyncio.get_running_loop().time() < p.deadline:
            self._ctx.metadata.invalidate(p.table_id, p.partition_id)
            self._spawn(self._retry_later(p))
            return
        text = message or codes.default_message(code)
        metrics_of(self._ctx).lookup(p.table_id).errors += 1
        p.future.set_exception(FlussError(text, code))

    async def _retry_later(self, p: _Pending) -> None:
        await asyncio.sleep(min(0.05 * (2 ** p.attempts), 1.0))
        await self._find_leader(p)


class _LookupBase:
    def __init__(self, table):
        self._table = table
        self._ctx = table._ctx
        self._runtime = table._runtime
        meta = table._meta
        self._meta = meta
        metrics_of(self._ctx).name_table(meta.table_id, str(meta.path))
        self._layout = KvLayout(meta)
        names = meta.schema.names
        types = meta.schema.types
        fmt = meta.descriptor.kv_format
        self._decoder = (IndexedRowDecoder if fmt == "INDEXED" else CompactedRowDecoder)(types, names)
        self._schema_id = meta.schema_id
        self._older = None
        self._pids: dict[str, int | None] = {}

    async def _partition_id(self, values) -> int | None:
        """The partition of the key, None if it does not exist (then nothing can match)."""
        lay = self._layout
        name = lay.partition_name([values[i] for i in lay.part_pos])
        pid = self._pids.get(name)
        if pid is not None:
            return pid
        try:
            pid, _ = await self._ctx.metadata.partition_by_name(self._meta.path, name)
        except FlussError as e:
            if e.error_code == PARTITION_NOT_EXISTS:
                return None
            raise
        if len(self._pids) > 4096:
            self._pids.clear()
        self._pids[name] = pid
        return pid

    async def _row(self, value) -> dict:
        if value is None:
            return None
        data = bytes(value)
        try:
            sid = int.from_bytes(data[:2], "little", signed=True)
            if sid != self._schema_id and len(data) >= 2:
                # written under an older schema: map its columns into the current one
                if self._older is None:
                    from .kvread import OlderRows
                    self._older = OlderRows(self._meta, self._ctx)
                return await self._older.row_dict(sid, data)
            return self._decoder.decode_dict(data, 2, len(data))
        except (ValueError, TypeError) as e:
            raise FlussError(f"table '{self._meta.path}': cannot decode a looked-up row: {e}") from None


class Lookuper(_LookupBase):
    """Point lookups by primary key: ``await lookuper.lookup({"id": 1})``.

    Made by ``new_lookup().enable_insert_if_not_exists().create_lookuper()``, a lookup of a missing
    key makes the server insert a row with that key (auto-increment columns filled, the others null)
    and returns it.
    """

    def __init__(self, table, insert_if_not_exists: bool = False):
        super().__init__(table)
        if insert_if_not_exists:
            check_insert_if_not_exists(self._meta)
        self._shaper = RowShaper(self._meta.schema, self._layout.pk_pos, sparse=True)
        self._insert = bool(insert_if_not_exists)

    @on_runtime
    async def lookup(self, pk) -> dict[str, object] | None:
        """The current row with this primary key.

        Lookups started together are sent to each leader as one request; a lookup alone is sent at
        once.

        Args:
            pk: The key: a dict by key column, or a list / tuple in primary-key order.

        Returns:
            The row as a dict, or ``None`` if there is no such key (or its partition does not exist).
            With insert-if-not-exists, a missing key's newly inserted row (``None`` only when the
            partition does not exist, as in Java).

        Raises:
            FlussError: A key column is missing or has a value of the wrong type, or the server failed.

        Example:
            ```python
            row = await lookuper.lookup({"id": 1})
            rows = await asyncio.gather(*[lookuper.lookup({"id": i}) for i in range(64)])
            ```
        """
        lay = self._layout
        values = self._shaper.values(pk)
        try:
            key = lay.key_encoder.encode([values[i] for i in lay.phys_pos])
            bucket = lay.bucket_of(key, values)
        except (TypeError, ValueError, OverflowError) as e:
            raise self._shaper.encode_error(e, None, lay.schema) from None
        pid = None
        if lay.part_pos:
            pid = await self._partition_id(values)
            if pid is None:
                return None
        value = await LookupClient.of(self._ctx).submit(self._meta.table_id, pid, bucket, key, False,
                                                        self._insert)
        return await self._row(value)

    def __repr__(self) -> str:
        return "Lookuper()"


def check_insert_if_not_exists(meta) -> None:
    """Java's rule: an inserted row has only its key and auto-increment values, so every other
    column must take null."""
    schema = meta.schema
    auto = set(schema.auto_increment_columns)
    pk = set(schema.primary_key)
    not_null = [c.name for c in schema.columns
                if not c.type.nullable and c.name not in pk and c.name not in auto]
    if not_null:
        raise illegal_argument(f"Lookup with insertIfNotExists enabled cannot be created for table "
                               f"'{meta.path}', because it contains non-nullable columns that are not "
                               f"primary key columns or auto increment columns: {not_null}")


def check_prefix_columns(meta, columns: list[str]) -> list[int]:
    """Positions of the lookup columns; the Rust client's rules and messages."""
    schema = meta.schema
    path = meta.path
    positions = []
    for name in columns:
        try:
            positions.append(schema.index_of(name))
        except (KeyError, ValueError):
            raise FlussError(f"Unknown column name '{name}' for prefix lookup") from None
    lay = KvLayout(meta)
    phys = [schema.names[i] for i in lay.phys_pos]
    bucket_keys = list(meta.descriptor.bucket_keys) or phys
    if not bucket_keys:
        raise illegal_argument(f"Can not perform prefix lookup on table '{path}', because it has no "
                               f"bucket keys.")
    if phys[:len(bucket_keys)] != bucket_keys:
        raise illegal_argument(f"Can not perform prefix lookup on table '{path}', because the bucket "
                               f"keys {bucket_keys} is not a prefix subset of the physical primary "
                               f"keys {phys} (excluded partition fields if present).")
    parts = list(meta.descriptor.partition_keys)
    for p in parts:
        if p not in columns:
            raise illegal_argument(f"Can not perform prefix lookup on table '{path}', because the "
                                   f"lookup columns {columns} must contain all partition fields "
                                   f"{parts}.")
    physical_lookup = [c for c in columns if c not in parts]
    if physical_lookup != bucket_keys:
        raise illegal_argument(f"Can not perform prefix lookup on table '{path}', because the lookup "
                               f"columns {columns} must contain all bucket keys {bucket_keys} in "
                               f"order.")
    if bucket_keys == phys:
        raise illegal_argument(f"Can not perform prefix lookup on table '{path}', because the lookup "
                               f"columns {columns} equals the physical primary keys {phys}. Please "
                               f"use primary key lookup (Lookuper without lookup_by) instead.")
    return positions


class PrefixLookuper(_LookupBase):
    """Every row whose primary key starts with a bucket-key prefix:
    ``table.new_lookup().lookup_by(["a", "b"]).create_lookuper()``."""

    def __init__(self, table, columns: list[str]):
        meta = table._meta
        if not meta.schema.primary_key:
            raise illegal_argument(f"Log table {meta.path} doesn't support prefix lookup")
        positions = check_prefix_columns(meta, list(columns))
        super().__init__(table)
        self._shaper = RowShaper(meta.schema, positions, sparse=True)

    @on_runtime
    async def lookup(self, prefix) -> list[dict[str, object]]:
        """Every current row whose primary key starts with this prefix.

        Args:
            prefix: Values of the lookup columns (partition keys, then the bucket key): a dict, or a
                list / tuple in that order.

        Returns:
            The rows as dicts, ``[]`` if none.

        Raises:
            FlussError: A lookup column is missing or has a value of the wrong type.
        """
        lay = self._layout
        values = self._shaper.values(prefix)
        try:
            bkey, bucket = lay.prefix_key_and_bucket(values)
        except (TypeError, ValueError, OverflowError) as e:
            raise self._shaper.encode_error(e, None, lay.schema) from None
        pid = None
        if lay.part_pos:
            pid = await self._partition_id(values)
            if pid is None:
                return []
        values = await LookupClient.of(self._ctx).submit(self._meta.table_id, pid, bucket, bkey, True)
        return [await self._row(v) for v in values]

    def __repr__(self) -> str:
        return "PrefixLookuper()"

