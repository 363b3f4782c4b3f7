"""Machinery of the differential conformance test (test_differential.py): the two servers, the
request script's runner, answers as plain data, their normalisation and their comparison.

An answer is one of
* ``ok``: a SUCCESS frame, its protobuf body as a dict (``to_dict``);
* ``error``: an ERROR_RESPONSE frame, ``code`` and ``message`` (``None`` when the server left the
  message out, which Java does when it equals the code's default text);
* ``silence``: no frame within the wait (the Java server drops what it does not serve);
* ``closed``: the server closed the connection (``message`` says how).
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.descriptor import FieldDescriptor

from fluss_fast.error_codes import default_message
from fluss_fast.errors import FlussError
from fluss_fast.rpc import fluss_api_pb2 as pb
from fluss_fast.rpc.api import COORDINATOR, TABLET_SERVER, Api
from fluss_fast.rpc.connection import Connection
from fluss_fast.rpc.frame import ERROR_RESPONSE, SERVER_FAILURE, SUCCESS_RESPONSE, encode_request

REQUEST_TIMEOUT_MS = 10_000
# How long a request the Java server drops is given before it counts as silence: the Java server
# answers everything else on a loopback within milliseconds.
SILENCE_WAIT_S = 3.0


# -- answers ---------------------------------------------------------------------------------------
@dataclass
class Answer:
    kind: str  # ok | error | silence | closed
    body: Any = None
    code: int | None = None
    message: str | None = None

    def short(self) -> str:
        if self.kind == "ok":
            codes = sorted(set(_bucket_errors(self.body)))
            return f"ok (bucket errors {codes})" if codes else "ok"
        if self.kind == "error":
            return f"error {self.code}"
        return self.kind


def _bucket_errors(body) -> list[int]:
    if isinstance(body, dict):
        out = [body["error_code"]] if body.get("error_code") else []
        for v in body.values():
            out += _bucket_errors(v)
        return out
    if isinstance(body, list):
        return [c for v in body for c in _bucket_errors(v)]
    return []


def _repeated(fd) -> bool:
    # protobuf 7 drops FieldDescriptor.label for is_repeated
    if hasattr(fd, "is_repeated"):
        return fd.is_repeated
    return fd.label == FieldDescriptor.LABEL_REPEATED


def to_dict(msg) -> dict:
    """Every field that is set (proto2 presence: an empty bytes field that is set is kept)."""
    out: dict[str, Any] = {}
    for fd, value in msg.ListFields():
        if _repeated(fd):
            out[fd.name] = [to_dict(v) for v in value] if fd.message_type else list(value)
        elif fd.message_type:
            out[fd.name] = to_dict(value)
        else:
            out[fd.name] = value
    return out


async def call(conn: Connection, api_key: int, request) -> Answer:
    try:
        resp = await conn.request(api_key, request)
    except FlussError as e:
        code = e.error_code
        if code == 25 and "timed out" in e.message:
            return Answer("silence", message=e.message)
        if code == 1:
            return Answer("closed", message=e.message)
        # the client puts the code's default text in place of an absent message: undo that, so
        # that both paths (this and raw_call) show None for "absent or the default text"
        message = None if e.message == default_message(code) else e.message
        return Answer("error", code=code, message=message)
    return Answer("ok", body=to_dict(resp))


_RESP = struct.Struct(">ib")


async def raw_call(host: str, port: int, api_key: int, version: int, body: bytes,
                   wait: float = SILENCE_WAIT_S, sasl: tuple[str, str] | None = None) -> Answer:
    """One request framed by hand on a fresh connection (after ApiVersions and, with ``sasl``, PLAIN
    authentication), for what fluss_fast's client refuses to send: keys the server did not
    advertise. The answer's body stays bytes."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        rid = 0

        async def exchange(key, ver, payload, timeout) -> Answer:
            nonlocal rid
            rid += 1
            writer.write(encode_request(key, ver, rid, payload))
            await writer.drain()
            try:
                head = await asyncio.wait_for(reader.readexactly(5), timeout)
            except TimeoutError:
                return Answer("silence")
            except (asyncio.IncompleteReadError, ConnectionError) as e:
                return Answer("closed", message=f"{type(e).__name__}")
            length, kind = _RESP.unpack(head)
            rest = await reader.readexactly(length - 1)
            if kind == SERVER_FAILURE:
                err = pb.ErrorResponse.FromString(rest)
                return Answer("closed", code=err.error_code, message=f"SERVER_FAILURE: {err.error_message}")
            payload = rest[4:]
            if kind == ERROR_RESPONSE:
                err = pb.ErrorResponse.FromString(payload)
                message = err.error_message if err.HasField("error_message") else None
                if message == default_message(err.error_code):
                    message = None
                return Answer("error", code=err.error_code, message=message)
            if kind == SUCCESS_RESPONSE:
                return Answer("ok", body=payload)
            return Answer("closed", message=f"unknown response type {kind}")

        hello = pb.ApiVersionsRequest(client_software_name="fluss-fast-conformance", client_software_version="0")
        a = await exchange(Api.API_VERSIONS, 0, hello.SerializeToString(), 10.0)
        if a.kind != "ok":
            raise AssertionError(f"ApiVersions to {host}:{port} failed: {a}")
        if sasl is not None:
            token = b"\0" + sasl[0].encode() + b"\0" + sasl[1].encode()
            a = await exchange(Api.AUTHENTICATE, 0,
                               pb.AuthenticateRequest(protocol="PLAIN", token=token).SerializeToString(), 10.0)
            if a.kind != "ok":
                raise AssertionError(f"SASL to {host}:{port} failed: {a}")
        return await exchange(api_key, version, body, wait)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await writer.wait_closed()


# -- the two servers -------------------------------------------------------------------------------
def split(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    return host, int(port)


class EmbeddedServer:
    """``python -m fluss_fast server`` in a child process, with a SASL listener."""

    def __init__(self, sasl_users: dict[str, str]):
        self.sasl_users = sasl_users
        self.data_dir = tempfile.mkdtemp(prefix="fluss-conformance-embedded-")
        self.proc: subprocess.Popen | None = None
        self.bootstrap = self.sasl_bootstrap = ""

    def start(self, timeout: float = 60.0) -> EmbeddedServer:
        cmd = [sys.executable, "-m", "fluss_fast", "server", "--data-dir", self.data_dir,
               "--listen", "127.0.0.1:0", "--sasl-listen", "127.0.0.1:0"]
        for user, pw in self.sasl_users.items():
            cmd += ["--sasl-user", f"{user}={pw}"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            if select.select([self.proc.stdout], [], [], 0.2)[0]:
                line = self.proc.stdout.readline()
                if line.startswith("READY"):
                    fields = dict(p.split("=", 1) for p in line.split()[1:])
                    self.bootstrap = fields["bootstrap.servers"]
                    self.sasl_bootstrap = fields["sasl.bootstrap.servers"]
                    return self
            if self.proc.poll() is not None:
                break
        self.stop()
        raise RuntimeError("the embedded server did not print READY")

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(15)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(5)
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            self.proc = None
        shutil.rmtree(self.data_dir, ignore_errors=True)


@dataclass
class Target:
    """One server under test and what the script learned about it so far."""

    name: str
    bootstrap: str
    sasl_bootstrap: str
    sasl: tuple[str, str]
    coordinator: Connection | None = None
    tablet: Connection | None = None
    tablet_addr: tuple[str, int] = ("", 0)
    # server-assigned id -> the placeholder it is shown as (ids differ between two clusters)
    ids: dict[tuple[str, int], str] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)

    async def open(self) -> None:
        host, port = split(self.bootstrap)
        self.coordinator = await Connection.open(host, port, request_timeout_ms=REQUEST_TIMEOUT_MS,
                                                 expected_server_type=COORDINATOR)
        meta = await self.coordinator.request(Api.GET_METADATA, pb.MetadataRequest())
        ts = meta.tablet_servers[0]
        self.tablet_addr = (ts.host, ts.port)
        self.tablet = await Connection.open(ts.host, ts.port, request_timeout_ms=REQUEST_TIMEOUT_MS,
                                            expected_server_type=TABLET_SERVER)

    async def c(self, api_key: int, request) -> Answer:
        """``request`` to the coordinator (reconnecting if an earlier step lost the connection)."""
        if self.coordinator is None or self.coordinator.closed:
            host, port = split(self.bootstrap)
            self.coordinator = await Connection.open(host, port, request_timeout_ms=REQUEST_TIMEOUT_MS)
        return await call(self.coordinator, api_key, request)

    async def t(self, api_key: int, request) -> Answer:
        """``request`` to the tablet server."""
        if self.tablet is None or self.tablet.closed:
            self.tablet = await Connection.open(*self.tablet_addr, request_timeout_ms=REQUEST_TIMEOUT_MS)
        return await call(self.tablet, api_key, request)

    async def close(self) -> None:
        for conn in (self.coordinator, self.tablet):
            if conn is not None:
                conn.close()
                await conn.wait_closed()

    def name_id(self, kind: str, value: int, label: str) -> None:
        self.ids[(kind, value)] = f"<{kind}:{label}>"


# -- normalisation ---------------------------------------------------------------------------------
#: Fields whose values legitimately differ between two clusters, and why. Each is replaced by a
#: placeholder that keeps what must still hold (set, positive, the same table as in the other run).
NORMALISED_FIELDS = {
    "table_id": "assigned by the server; shown as the name of the table it stands for",
    "partition_id": "assigned by the server; shown as the name of the partition it stands for",
    "created_time": "wall-clock time of creation",
    "modified_time": "wall-clock time of the last change",
    "host": "each cluster listens on its own loopback address",
    "port": "each cluster listens on its own free ports",
    "remote_data_dir": "each cluster has its own remote directory (kept: whether it is set)",
    "writer_id": "assigned by the server (kept: that it is >= 0)",
    "commit_timestamp": "log batch header: the leader's wall clock at append (the CRC does not cover it)",
    "buckets_resp": "(order only) per-bucket entries are sorted by partition and bucket: their order is not "
                    "defined (the Java server answers from a hash map)",
}


def normalise(value: Any, target: Target, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: normalise(v, target, k) for k, v in value.items()}
    if isinstance(value, list):
        if key == "buckets_resp":
            # the order of per-bucket entries is not defined (Java answers from a hash map)
            value = sorted(value, key=lambda b: (b.get("partition_id", -1), b.get("bucket_id", -1)))
        return [normalise(v, target, key) for v in value]
    if key in ("table_id", "partition_id") and isinstance(value, int):
        return target.ids.get((key, value), f"<unnamed {key}>")
    if key in ("created_time", "modified_time", "commit_timestamp") and isinstance(value, int):
        return "<time>" if value > 0 else value
    if key == "host":
        return "<host>"
    if key == "port":
        return "<port>"
    if key == "remote_data_dir":
        return "<remote dir>"
    if key == "writer_id" and isinstance(value, int):
        return "<writer id>" if value >= 0 else value
    if key in ("table_json", "schema_json", "database_json") and isinstance(value, bytes):
        return normalise(json.loads(value), target, key)
    if key == "records" and isinstance(value, bytes):
        return [normalise(b, target) for b in log_batches(value)]
    return value


def log_batches(buf: bytes) -> list[dict]:
    """A records blob as one dict per batch: header fields and the payload bytes after the header."""
    from fluss_fast.codec.log import logbatch

    out = []
    for h in logbatch.iter_batches(buf):
        start = h.position
        d = {name: getattr(h, name) for name in (
            "base_offset", "magic", "commit_timestamp", "leader_epoch", "schema_id", "attributes",
            "last_offset_delta", "writer_id", "batch_sequence", "record_count", "statistics_length")
            if getattr(h, name, None) is not None}
        d["crc_valid"] = logbatch.verify_crc(buf, start)
        d["payload"] = bytes(buf[start + h.header_size:start + h.total_size])
        out.append(d)
    return out


# -- comparison ------------------------------------------------------------------------------------
@dataclass
class Verdict:
    hard: list[str] = field(default_factory=list)   # the answers differ
    soft: list[str] = field(default_factory=list)   # only the wording of a message differs


def _names_in(message: str | None, names: list[str]) -> list[str]:
    if not message:
        return []
    return [n for n in names if re.search(r"(?<![A-Za-z0-9_])" + re.escape(n) + r"(?![A-Za-z0-9_])", message)]


def compare_messages(path: str, java: str | None, ours: str | None, names: list[str], v: Verdict) -> None:
    if java == ours:
        return
    missing = [n for n in _names_in(java, names) if n not in _names_in(ours, names)]
    line = f"{path}: java {_clip(java)!r} / embedded {_clip(ours)!r}"
    if missing:
        v.hard.append(f"{line}: the embedded message lacks {missing}")
    else:
        v.soft.append(line)


def _clip(s: str | None, n: int = 300) -> str | None:
    if s is None or len(s) <= n:
        return s
    return s[:n] + "..."


def compare_values(path: str, java: Any, ours: Any, names: list[str], v: Verdict) -> None:
    if isinstance(java, dict) and isinstance(ours, dict):
        for k in sorted(set(java) | set(ours), key=str):
            p = f"{path}.{k}" if path else str(k)
            if k == "error_message":
                compare_messages(p, java.get(k), ours.get(k), names, v)
            elif k not in ours:
                v.hard.append(f"{p}: java {_clip(repr(java[k]))} / embedded: absent")
            elif k not in java:
                v.hard.append(f"{p}: java: absent / embedded {_clip(repr(ours[k]))}")
            else:
                compare_values(p, java[k], ours[k], names, v)
        return
    if isinstance(java, list) and isinstance(ours, list):
        if len(java) != len(ours):
            v.hard.append(f"{path}: java {len(java)} items {_clip(repr(java))} / embedded {len(ours)} items "
                          f"{_clip(repr(ours))}")
            return
        for i, (a, b) in enumerate(zip(java, ours, strict=True)):
            compare_values(f"{path}[{i}]", a, b, names, v)
        return
    if java != ours:
        v.hard.append(f"{path}: java {_clip(repr(java))} / embedded {_clip(repr(ours))}")


def compare(java: Answer, ours: Answer, names: list[str]) -> Verdict:
    v = Verdict()
    if java.kind != ours.kind:
        v.hard.append(f"java answered {java.short()} / embedded {ours.short()} "
                      f"(java: {_clip(java.message or repr(java.body))}; "
                      f"embedded: {_clip(ours.message or repr(ours.body))})")
        return v
    if java.kind == "error":
        if java.code != ours.code:
            v.hard.append(f"error code: java {java.code} / embedded {ours.code} "
                          f"(java: {_clip(java.message)!r}; embedded: {_clip(ours.message)!r})")
        compare_messages("error_message", java.message, ours.message, names, v)
    elif java.kind == "ok":
        compare_values("", java.body, ours.body, names, v)
    return v


# -- running ---------------------------------------------------------------------------------------
Step = tuple[str, Callable]


async def run_script(target: Target, steps: list[Step], deadline_s: float = 150.0) -> dict[str, Answer]:
    """Every step in order; a step that raises is recorded as ``closed`` with the exception."""
    results: dict[str, Answer] = {}
    await target.open()
    start = time.monotonic()
    try:
        for name, fn in steps:
            if time.monotonic() - start > deadline_s:
                results[name] = Answer("closed", message="script deadline passed before this step")
                continue
            try:
                results[name] = await fn(target)
            except Exception as e:  # noqa: BLE001 - one broken step must not hide the others
                results[name] = Answer("closed", message=f"step raised {type(e).__name__}: {e}")
    finally:
        await target.close()
    return results


def java_available() -> str | None:
    """Why the Java cluster cannot run here, or None."""
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (the Java cluster is assembled with mvn and runs on java)"
    return None


def in_ci() -> bool:
    return bool(os.environ.get("CI"))
