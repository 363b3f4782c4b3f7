"""Database and table names: what the coordinator accepts (Java's ``TablePath`` rules)."""
from __future__ import annotations

import re

from ..error_codes import Errors
from ..errors import FlussError

MAX_NAME_LENGTH = 200
INTERNAL_PREFIX = "__"
_NAME_RE = re.compile(r"^[A-Za-z0-9_\-]+$")


def invalid_name_reason(name: str) -> str | None:
    if name is None or name == "":
        return "the empty string is not allowed"
    if name in (".", ".."):
        return "'.' and '..' are not allowed"
    if len(name) > MAX_NAME_LENGTH:
        return f"the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
    if not _NAME_RE.match(name):
        return f"'{name}' contains one or more characters other than ASCII alphanumerics, '_' and '-'"
    return None


def prefix_reason(name: str) -> str | None:
    if name.startswith(INTERNAL_PREFIX):
        return (f"'{INTERNAL_PREFIX}' is not allowed as prefix, since it is reserved for internal "
                "databases/internal tables/internal partitions in Fluss server")
    return None


def check_database_name(name: str, creating: bool = True) -> None:
    reason = invalid_name_reason(name) or (prefix_reason(name) if creating else None)
    if reason:
        raise FlussError(f"Database name {name} is invalid: {reason}", Errors.INVALID_DATABASE_EXCEPTION)


def check_table_name(name: str, creating: bool = True) -> None:
    reason = invalid_name_reason(name) or (prefix_reason(name) if creating else None)
    if reason:
        raise FlussError(f"Table name {name} is invalid: {reason}", Errors.INVALID_TABLE_EXCEPTION)
