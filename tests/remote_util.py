"""Helpers for the remote (tiered) log tests: server arguments that tier fast, an S3 endpoint served
by a real moto server on a loopback port, and waiting for tiering to reach a point."""
from __future__ import annotations

import glob
import json
import os
import time

import pytest

from client_util import free_port

BUCKET = "fluss-remote"
ACCESS_KEY = "test-key"
SECRET_KEY = "test-secret"
REGION = "us-east-1"


def tiering_args(remote: str, *extra: str, segment: str = "8kb", local_segments: int = 1) -> list:
    args = ["--remote-dir", remote, "-c", f"log.segment.file-size={segment}",
            "-c", "remote.log.task-interval-duration=150ms",
            "-c", f"table.log.tiered.local-segments={local_segments}"]
    for e in extra:
        args += ["-c", e]
    return args


def s3_args(endpoint: str) -> list:
    return ["-c", f"s3.endpoint={endpoint}", "-c", f"s3.access-key={ACCESS_KEY}",
            "-c", f"s3.secret-key={SECRET_KEY}", "-c", f"s3.region={REGION}",
            "-c", "s3.path-style-access=true"]


class MotoS3:
    """A moto S3 server in a thread of the test process, restartable on the same port (its data
    lives in the process, so a restart keeps the objects: an outage, not a wipe)."""

    def __init__(self):
        from moto.server import ThreadedMotoServer

        self._cls = ThreadedMotoServer
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.server = None

    def start(self):
        import logging

        # one INFO line per S3 request would drown a failing test's report
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        self.server = self._cls(ip_address="127.0.0.1", port=self.port, verbose=False)
        self.server.start()
        return self

    def stop(self):
        if self.server is not None:
            self.server.stop()
            self.server = None

    def filesystem(self):
        from fluss_fast.remote_fs import s3_filesystem

        return s3_filesystem(ACCESS_KEY, SECRET_KEY, region=REGION, endpoint=self.endpoint, path_style=True)


@pytest.fixture(scope="module")
def moto_s3():
    pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    s3 = MotoS3().start()
    boto3.client("s3", endpoint_url=s3.endpoint, aws_access_key_id=ACCESS_KEY,
                 aws_secret_access_key=SECRET_KEY, region_name=REGION).create_bucket(Bucket=BUCKET)
    yield s3
    s3.stop()


def pointer(data_dir: str, db: str, table: str, sub: str = "log-0") -> dict:
    """The committed remote-log state of one bucket (the server's pointer file)."""
    paths = glob.glob(os.path.join(data_dir, "log", db, f"{table}-*", sub, "remote-log.json"))
    if not paths:
        return {}
    with open(paths[0], "rb") as f:
        return json.loads(f.read())


def local_bases(data_dir: str, db: str, table: str, sub: str = "log-0") -> list:
    return sorted(int(os.path.basename(p)[:-4]) for p in
                  glob.glob(os.path.join(data_dir, "log", db, f"{table}-*", sub, "*.log")))


def wait_tiered(data_dir: str, db: str, table: str, min_segments: int = 3, sub: str = "log-0",
                timeout: float = 30.0) -> dict:
    """Waits until the bucket has at least ``min_segments`` remote segments and its local log no
    longer starts at 0; returns the pointer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        p = pointer(data_dir, db, table, sub)
        segs = p.get("manifest", {}).get("remote_log_segments", [])
        bases = local_bases(data_dir, db, table, sub)
        if len(segs) >= min_segments and bases and bases[0] > 0:
            return p
        time.sleep(0.1)
    raise AssertionError(f"{db}.{table} {sub} was not tiered within {timeout}s: {pointer(data_dir, db, table, sub)}")
