"""ACLs of the embedded server, as the Java ``DefaultAuthorizer`` keeps and checks them.

Off unless the server is started with ``-c authorizer.enabled=true``: the ACL APIs then answer
``SECURITY_DISABLED_EXCEPTION`` (47), as a Java cluster without an authorizer does. When on:

- ``super.users`` (``User:admin;User:ops``) may do everything;
- CREATE/LIST/DROP_ACLS keep the rules in ``<data dir>/acls.json``. Creating or dropping a rule needs
  ALL on its resource (on the database for a table rule); listing shows the rules of the resources
  the caller may DESCRIBE;
- a rule on the cluster covers every database and table, a rule on a database covers its tables,
  a rule named ``*`` covers every resource of its type, ``ALL`` covers every operation, and any
  operation implies DESCRIBE;
- requests are checked before they run, with Java's operations: CREATE on the cluster (create
  database), CREATE on the database (create table), DROP and ALTER on databases and tables, WRITE
  on a table (produce, put, partitions, writer ids), READ (fetch, lookups, scans), DESCRIBE (list
  offsets). A refusal is ``AUTHORIZATION_EXCEPTION`` (48). Connections on the plaintext listener
  are ``User:ANONYMOUS``.

LIST_DATABASES and LIST_TABLES show only what the caller may DESCRIBE. Not covered: metadata answers
are not filtered.
"""
from __future__ import annotations

import json
import os
import tempfile
from typing import TYPE_CHECKING

from ..error_codes import Errors
from ..errors import FlussError
from ..rpc import fluss_api_pb2 as pb
from ..rpc.api import Api
from .protocol import RawParsed, RequestContext
from .settings import parse_bool

if TYPE_CHECKING:
    from .app import FlussServer

ANY = 1
CLUSTER, DATABASE, TABLE = 2, 3, 4
ALL, READ, WRITE, CREATE, DROP, ALTER, DESCRIBE = 2, 3, 4, 5, 6, 7, 8
ALLOW = 2
CLUSTER_NAME = "fluss-cluster"
_TYPE_NAMES = {CLUSTER: "CLUSTER", DATABASE: "DATABASE", TABLE: "TABLE"}
_OP_NAMES = {ALL: "ALL", READ: "READ", WRITE: "WRITE", CREATE: "CREATE", DROP: "DROP", ALTER: "ALTER",
             DESCRIBE: "DESCRIBE"}
_IMPLY_DESCRIBE = frozenset((DESCRIBE, READ, WRITE, CREATE, DROP, ALTER))


def _acl_of(info) -> tuple:
    """A PbAclInfo as the tuple stored in acls.json (resource type and name, principal name and
    type, host, operation, permission)."""
    return (info.resource_type, info.resource_name, info.principal_name, info.principal_type, info.host,
            info.operation_type, info.permission_type)


def _principal(ctx: RequestContext) -> tuple[str, str]:
    """(type, name) of the connection's principal: ``User:alice``, or Java's anonymous user."""
    text = ctx.principal or "ANONYMOUS"
    kind, sep, name = text.partition(":")
    return (kind, name) if sep else ("User", text)


def _host(ctx: RequestContext) -> str:
    peer = ctx.peer
    return str(peer[0]) if isinstance(peer, (tuple, list)) and peer else ""


def _resource_text(rtype: int, name: str) -> str:
    return f"Resource{{type={_TYPE_NAMES.get(rtype, rtype)}, name='{name}'}}"


def _deny(ctx, op: int, rtype: int, name: str) -> FlussError:
    kind, who = _principal(ctx)
    return FlussError(f"Principal FlussPrincipal{{name='{who}', type='{kind}'}} have no authorization to operate "
                      f"{_OP_NAMES.get(op, op)} on resource {_resource_text(rtype, name)} ",
                      Errors.AUTHORIZATION_EXCEPTION)


class Authorizer:
    """The rules and the checks; ``guard`` wraps a request handler with its check."""

    def __init__(self, server: FlussServer) -> None:
        self.server = server
        settings = server.settings
        raw = settings.raw("authorizer.enabled")
        self.enabled = parse_bool(raw) if raw else False
        supers = settings.raw("super.users") or ""
        self.super_users: set[tuple[str, str]] = set()
        for item in supers.split(";"):
            kind, sep, name = item.strip().partition(":")
            if sep and name:
                self.super_users.add((kind, name))
        self.path = os.path.join(server.data_dir, "acls.json")
        self.acls: set[tuple] = set()
        if self.enabled and os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as f:
                self.acls = {tuple(a) for a in json.load(f)}

    # -- checks ------------------------------------------------------------------------------------
    def allowed(self, ctx, op: int, rtype: int, name: str) -> bool:
        principal = _principal(ctx)
        if principal in self.super_users:
            return True
        covering = {(rtype, name), (rtype, "*")}
        if rtype == TABLE:
            covering.add((DATABASE, name.split(".", 1)[0]))
        if rtype != CLUSTER:
            covering.add((CLUSTER, CLUSTER_NAME))
        ops = _IMPLY_DESCRIBE if op == DESCRIBE else (op,)
        host = _host(ctx)
        for a_type, a_name, p_name, p_type, a_host, a_op, a_perm in self.acls:
            if (a_type, a_name) not in covering or a_perm != ALLOW:
                continue
            if not ((p_type, p_name) == principal or p_name == "*"):
                continue
            if (a_op in ops or a_op == ALL) and (a_host in ("*", host)):
                return True
        return False

    def check(self, ctx, op: int, rtype: int, name: str) -> None:
        if not self.allowed(ctx, op, rtype, name):
            raise _deny(ctx, op, rtype, name)

    def _table_name(self, table_id: int) -> str | None:
        catalog = self.server.catalog
        entry = None if catalog is None else catalog.table_by_id(table_id)  # None before the server starts
        return None if entry is None else entry.path

    def _check_table_id(self, ctx, op: int, table_id: int) -> None:
        name = self._table_name(table_id)
        if name is not None:  # an unknown id is the handler's error
            self.check(ctx, op, TABLE, name)

    def _checks(self, ctx, api: int, req) -> None:
        def path(tp):
            return f"{tp.database_name}.{tp.table_name}"

        if api == Api.CREATE_DATABASE:
            self.check(ctx, CREATE, CLUSTER, CLUSTER_NAME)
        elif api == Api.DROP_DATABASE:
            self.check(ctx, DROP, DATABASE, req.database_name)
        elif api == Api.ALTER_DATABASE:
            self.check(ctx, ALTER, DATABASE, req.database_name)
        elif api == Api.CREATE_TABLE:
            self.check(ctx, CREATE, DATABASE, req.table_path.database_name)
        elif api == Api.DROP_TABLE:
            self.check(ctx, DROP, TABLE, path(req.table_path))
        elif api == Api.ALTER_TABLE:
            self.check(ctx, ALTER, TABLE, path(req.table_path))
        elif api in (Api.CREATE_PARTITION, Api.DROP_PARTITION):
            self.check(ctx, WRITE, TABLE, path(req.table_path))
        elif api in (Api.PRODUCE_LOG, Api.PUT_KV):
            self._check_table_id(ctx, WRITE, req.table_id)
        elif api in (Api.LOOKUP, Api.PREFIX_LOOKUP, Api.LIMIT_SCAN):
            self._check_table_id(ctx, READ, req.table_id)
        elif api == Api.FETCH_LOG:
            for t in req.tables_req:
                self._check_table_id(ctx, READ, t.table_id)
        elif api == Api.SCAN_KV:
            if req.HasField("bucket_scan_req"):
                self._check_table_id(ctx, READ, req.bucket_scan_req.table_id)
        elif api == Api.LIST_OFFSETS:
            self._check_table_id(ctx, DESCRIBE, req.table_id)
        elif api == Api.INIT_WRITER:
            for tp in req.table_path:
                self.check(ctx, WRITE, TABLE, path(tp))

    def _filter(self, ctx, api: int, req, resp) -> None:
        """Only what the caller may DESCRIBE, as Java's ``filterByAuthorized``."""
        if api == Api.LIST_TABLES:
            names = [n for n in resp.table_name if self.allowed(ctx, DESCRIBE, TABLE, f"{req.database_name}.{n}")]
            del resp.table_name[:]
            resp.table_name.extend(names)
            return
        names = [n for n in resp.database_name if self.allowed(ctx, DESCRIBE, DATABASE, n)]
        del resp.database_name[:]
        resp.database_name.extend(names)
        summaries = [m for m in resp.database_summary if self.allowed(ctx, DESCRIBE, DATABASE, m.database_name)]
        del resp.database_summary[:]
        resp.database_summary.extend(summaries)

    GUARDED = frozenset((Api.LIST_DATABASES, Api.LIST_TABLES, Api.CREATE_DATABASE, Api.DROP_DATABASE,
                         Api.ALTER_DATABASE, Api.CREATE_TABLE,
                         Api.DROP_TABLE, Api.ALTER_TABLE, Api.CREATE_PARTITION, Api.DROP_PARTITION,
                         Api.PRODUCE_LOG, Api.PUT_KV, Api.LOOKUP, Api.PREFIX_LOOKUP, Api.LIMIT_SCAN,
                         Api.SCAN_KV, Api.FETCH_LOG, Api.LIST_OFFSETS, Api.INIT_WRITER))

    def guard(self, api: int, entry):
        """``entry`` (a handler or a ``RawParsed``) with this API's check in front; as is when the
        authorizer is off or the API needs none."""
        if not self.enabled or api not in self.GUARDED:
            return entry
        raw = isinstance(entry, RawParsed)
        handler = entry.handler if raw else entry

        async def checked(ctx, version, req):
            self._checks(ctx, api, req)
            resp = await handler(ctx, version, req)
            if api in (Api.LIST_DATABASES, Api.LIST_TABLES):
                self._filter(ctx, api, req, resp)
            return resp

        return RawParsed(checked, entry.parse) if raw else checked

    # -- the ACL APIs --------------------------------------------------------------------------------
    def _require_enabled(self) -> None:
        if not self.enabled:
            raise FlussError("No Authorizer is configured.", Errors.SECURITY_DISABLED_EXCEPTION)

    def _check_acl_operation(self, ctx, rtype: int, name: str) -> None:
        if rtype == TABLE:
            self.check(ctx, ALL, DATABASE, name.split(".", 1)[0])
        else:
            self.check(ctx, ALL, rtype, name)

    def _save(self) -> None:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(self.path), prefix=".acls-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(sorted(self.acls), f)
        os.replace(tmp, self.path)

    async def create_acls(self, ctx, version, req):
        self._require_enabled()
        resp = pb.CreateAclsResponse()
        changed = False
        for info in req.acl:
            out = resp.aclRes.add()
            out.acl.CopyFrom(info)
            acl = _acl_of(info)
            if ANY in (info.resource_type, info.operation_type, info.permission_type) \
                    or info.resource_type not in _TYPE_NAMES:
                out.error_code = Errors.INVALID_CONFIG_EXCEPTION
                out.error_message = "An ACL binding needs a concrete resource type, operation and permission (not ANY)."
                continue
            try:
                self._check_acl_operation(ctx, info.resource_type, info.resource_name)
            except FlussError as exc:
                out.error_code, out.error_message = exc.error_code, exc.message
                continue
            if acl not in self.acls:
                self.acls.add(acl)
                changed = True
        if changed:
            self._save()
        return resp

    @staticmethod
    def _matches(f, acl: tuple) -> bool:
        a_type, a_name, p_name, p_type, a_host, a_op, a_perm = acl
        return ((f.resource_type == ANY or f.resource_type == a_type)
                and (not f.HasField("resource_name") or f.resource_name == a_name)
                and (not f.HasField("principal_name") or f.principal_name == p_name)
                and (not f.HasField("principal_type") or f.principal_type == p_type)
                and (not f.HasField("host") or f.host == a_host)
                and (f.operation_type == ANY or f.operation_type == a_op)
                and (f.permission_type == ANY or f.permission_type == a_perm))

    @staticmethod
    def _to_pb(acl: tuple, msg) -> None:
        (msg.resource_type, msg.resource_name, msg.principal_name, msg.principal_type, msg.host,
         msg.operation_type, msg.permission_type) = acl

    async def list_acls(self, ctx, version, req):
        self._require_enabled()
        resp = pb.ListAclsResponse()
        for acl in sorted(self.acls):
            if self._matches(req.acl_filter, acl) and self.allowed(ctx, DESCRIBE, acl[0], acl[1]):
                self._to_pb(acl, resp.acl.add())
        return resp

    async def drop_acls(self, ctx, version, req) -> pb.DropAclsResponse:
        self._require_enabled()
        resp = pb.DropAclsResponse()
        gone: set[tuple] = set()
        for f in req.acl_filter:
            result = resp.filter_results.add()
            for acl in sorted(self.acls):
                if not self._matches(f, acl):
                    continue
                m = result.matching_acls.add()
                self._to_pb(acl, m.acl)
                try:
                    self._check_acl_operation(ctx, acl[0], acl[1])
                except FlussError as exc:
                    m.error_code, m.error_message = exc.error_code, exc.message
                    continue
                gone.add(acl)
        if gone:
            self.acls -= gone
            self._save()
        return resp
