"""SASL/PLAIN for the client side of a connection (docs/contributing/protocol.md §5)."""
from __future__ import annotations

from ..error_codes import Errors
from ..errors import FlussError
from . import fluss_api_pb2 as pb
from .api import Api

MECHANISM = "PLAIN"


def parse_user_spec(spec: str) -> tuple[str, str]:
    """``NAME=PASSWORD`` (the password may itself contain '='); shared by every command that takes
    ``--sasl-user``, the embedded server's and the Java cluster launcher's."""
    name, sep, password = spec.partition("=")
    if not sep or not name:
        raise ValueError(f"SASL user must be NAME=PASSWORD, got {spec!r}")
    return name, password


def plain_token(username: str, password: str, authzid: str = "") -> bytes:
    """``[authzid] NUL user NUL password`` in UTF-8."""
    return b"\0".join((authzid.encode("utf-8"), username.encode("utf-8"), password.encode("utf-8")))


async def authenticate(conn, username: str, password: str, mechanism: str = MECHANISM) -> None:
    """One round trip: the server answers success (an empty or absent challenge) or an
    ERROR_RESPONSE, which reaches the caller as ``FlussError(46)``."""
    if mechanism.upper() != MECHANISM:
        raise FlussError(f"Unsupported SASL mechanism '{mechanism}': only PLAIN is supported", 46)
    if not username:
        raise FlussError("SASL/PLAIN needs a non-empty 'security.sasl.username'", 46)
    req = pb.AuthenticateRequest(protocol=MECHANISM, token=plain_token(username, password))
    try:
        await conn.request(Api.AUTHENTICATE, req, _handshake=True)
    except FlussError as exc:
        if exc.error_code in (Errors.AUTHENTICATE_EXCEPTION, Errors.RETRIABLE_AUTHENTICATE_EXCEPTION):
            raise FlussError(f"Authentication of user '{username}' at {conn.address} failed: {exc.message}",
                             exc.error_code) from None
        raise
