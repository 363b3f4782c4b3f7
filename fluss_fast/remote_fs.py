"""Remote storage access through ``pyarrow.fs`` (local paths, ``file://`` and ``s3://`` URLs).

Shared by the server (tiering, with its ``s3.*`` settings) and the client's remote-log reader (with
the credentials GET_FILESYSTEM_SECURITY_TOKEN hands out). Paths inside a file system are plain
``/``-joined strings, as ``pyarrow.fs`` wants them; the URL form (what goes into
``remote_log_tablet_dir``) is kept next to it.
"""
from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import urlparse

import pyarrow.fs as pafs

# The property names the Java server's S3 token provider puts into ``addition_info``
S3_ENDPOINT = "fs.s3a.endpoint"
S3_REGION = "fs.s3a.region"
S3_PATH_STYLE = "fs.s3a.path.style.access"
# pyfluss (Rust) reads the region from this name instead, so the server sends both
S3_ENDPOINT_REGION = "fs.s3a.endpoint.region"


class RemoteStore:
    """One remote root: ``fs`` (a pyarrow FileSystem), ``root`` (path inside it), ``url`` (the
    root as users and clients see it), ``scheme``."""

    def __init__(self, fs, root: str, url: str, scheme: str, s3: dict | None = None):
        self.fs = fs
        self.root = root.rstrip("/") or "/"
        self.url = url.rstrip("/")
        self.scheme = scheme
        self.s3 = s3 or {}

    def path(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/")] + [p.strip("/") for p in parts if p])

    def url_of(self, *parts: str) -> str:
        return "/".join([self.url] + [p.strip("/") for p in parts if p])

    def token(self) -> tuple[str, bytes, dict[str, str]]:
        """(scheme, token bytes, addition_info) for GET_FILESYSTEM_SECURITY_TOKEN."""
        if self.scheme != "s3":
            return "file", b"", {}
        s3 = self.s3
        token = b""
        if s3.get("access_key"):
            token = json.dumps({"access_key_id": s3["access_key"],
                                "access_key_secret": s3.get("secret_key") or "",
                                "security_token": None}).encode()
        info = {}
        if s3.get("endpoint"):
            info[S3_ENDPOINT] = s3["endpoint"]
        if s3.get("region"):
            info[S3_REGION] = s3["region"]
            info[S3_ENDPOINT_REGION] = s3["region"]
        if s3.get("path_style") is not None:
            info[S3_PATH_STYLE] = "true" if s3["path_style"] else "false"
        return "s3", token, info


def s3_filesystem(access_key=None, secret_key=None, session_token=None, region=None, endpoint=None,
                  path_style=None, timeout_s: float = 10.0):
    kw: dict[str, Any] = dict(connect_timeout=timeout_s, request_timeout=max(timeout_s, 30.0))
    if access_key:
        kw.update(access_key=access_key, secret_key=secret_key or "")
        if session_token:
            kw["session_token"] = session_token
    else:
        kw["anonymous"] = False
    kw["region"] = region or "us-east-1"
    if endpoint:
        parsed = urlparse(endpoint if "://" in endpoint else "https://" + endpoint)
        kw["endpoint_override"] = parsed.netloc
        kw["scheme"] = parsed.scheme or "https"
    if path_style is not None:
        kw["force_virtual_addressing"] = not path_style
    # A dead endpoint must fail within the timeout, not be retried for minutes.
    # small objects (every test segment) go up in one PUT instead of a multipart upload
    kw["allow_delayed_open"] = True
    kw["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(max_attempts=2)
    return pafs.S3FileSystem(**kw)


def open_store(location: str, settings=None) -> RemoteStore:
    """The remote root at ``location`` (a local path, ``file://`` or ``s3://bucket/path``) with the
    server's ``s3.*`` settings."""
    if "://" not in location:
        root = os.path.abspath(os.path.expanduser(location))
        os.makedirs(root, exist_ok=True)
        return RemoteStore(pafs.LocalFileSystem(), root, root, "file")
    parsed = urlparse(location)
    scheme = parsed.scheme.lower()
    if scheme == "file":
        root = os.path.abspath(parsed.path)
        os.makedirs(root, exist_ok=True)
        return RemoteStore(pafs.LocalFileSystem(), root, "file://" + root, "file")
    if scheme in ("s3", "s3a"):
        get = (lambda k: settings.get(k)) if settings is not None else (lambda k: None)
        s3: dict[str, Any] = dict(access_key=get("s3.access-key"), secret_key=get("s3.secret-key"),
                  region=get("s3.region"), endpoint=get("s3.endpoint"), path_style=get("s3.path-style-access"))
        fs = s3_filesystem(**s3)
        root = parsed.netloc + parsed.path.rstrip("/")
        return RemoteStore(fs, root, f"s3://{root}", "s3", s3)
    fs, root = pafs.FileSystem.from_uri(location)
    return RemoteStore(fs, root, location.rstrip("/"), scheme)


def client_filesystem(url: str, token: dict | None):
    """(file system, path) for a remote file URL as a client sees it in a fetch answer, with the
    credentials of the last security token (``{"token": bytes, "info": {...}}``)."""
    if "://" not in url:
        return pafs.LocalFileSystem(), url
    parsed = urlparse(url)
    scheme = parsed.scheme.lower()
    if scheme == "file":
        return pafs.LocalFileSystem(), parsed.path
    if scheme in ("s3", "s3a"):
        token = token or {}
        creds = {}
        if token.get("token"):
            creds = json.loads(bytes(token["token"]).decode("utf-8"))
        info = token.get("info") or {}
        path_style = info.get(S3_PATH_STYLE)
        fs = s3_filesystem(access_key=creds.get("access_key_id"), secret_key=creds.get("access_key_secret"),
                           session_token=creds.get("security_token"),
                           region=info.get(S3_REGION) or info.get(S3_ENDPOINT_REGION),
                           endpoint=info.get(S3_ENDPOINT),
                           path_style=None if path_style is None else path_style.lower() == "true")
        return fs, parsed.netloc + parsed.path
    fs, path = pafs.FileSystem.from_uri(url)
    return fs, path
