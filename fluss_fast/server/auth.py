"""SASL/PLAIN on the server side (docs/contributing/protocol.md §5), with the Java server's checks and error texts."""
from __future__ import annotations

import hmac
import os

from ..error_codes import Errors
from ..errors import FlussError
from ..rpc.sasl import parse_user_spec

PLAIN = "PLAIN"
PLAINTEXT = "PLAINTEXT"


def load_users_file(path: str) -> dict[str, str]:
    """One ``NAME=PASSWORD`` per line; blank lines and lines starting with '#' are skipped."""
    users: dict[str, str] = {}
    with open(os.path.expanduser(path), encoding="utf-8") as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.rstrip("\r\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                name, password = parse_user_spec(line)
            except ValueError as e:
                raise ValueError(f"{path}:{lineno}: {e}") from None
            users[name] = password
    return users


def _fail(message: str) -> FlussError:
    return FlussError(message, Errors.AUTHENTICATE_EXCEPTION)


class PlainAuthenticator:
    """Checks PLAIN tokens against a fixed user table. Passwords are compared in constant time, and
    an unknown user costs the same comparison, so timing tells nothing about which names exist."""

    def __init__(self, users: dict[str, str]):
        self._users = {name: pw.encode("utf-8") for name, pw in users.items()}

    @staticmethod
    def accepts(mechanism: str) -> bool:
        return mechanism.upper() == PLAIN

    def authenticate(self, token: bytes) -> str:
        """Returns the principal name (``User:<name>`` is built by the caller) or raises FlussError(46)."""
        try:
            text = bytes(token).decode("utf-8")
        except UnicodeDecodeError:
            raise _fail("Invalid SASL/PLAIN response: the token is not valid UTF-8") from None
        parts = text.split("\x00")
        if len(parts) != 3:
            raise _fail(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authzid, username, password = parts
        if not username:
            raise _fail("Authentication failed: username not specified")
        if not password:
            raise _fail("Authentication failed: password not specified")
        expected = self._users.get(username)
        given = password.encode("utf-8")
        ok = hmac.compare_digest(given, expected if expected is not None else given + b"\x00")
        if expected is None or not ok:
            raise _fail("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise _fail("Authentication failed: Client requested an authorization id that is different "
                        "from username")
        return username
