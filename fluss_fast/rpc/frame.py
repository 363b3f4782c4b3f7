"""Frame layout (docs/contributing/protocol.md §1): a 4-byte big-endian length, then a small header, then a
protobuf body.

Request:  len | api_key i16 | api_version i16 | request_id i32 | body
Response: len | type i8 | request_id i32 | body          (type 0 success, 1 error)
          len | type i8 (2) | ErrorResponse               (server failure: no request id)
"""
from __future__ import annotations

import struct

LENGTH = struct.Struct(">i")
REQUEST_HEADER = struct.Struct(">ihhi")  # length, api_key, api_version, request_id
RESPONSE_HEADER = struct.Struct(">ibi")  # length, type, request_id
REQUEST_HEADER_AFTER_LENGTH = struct.Struct(">hhi")  # api_key, api_version, request_id
REQUEST_HEADER_SIZE = 8  # after the length field
RESPONSE_HEADER_SIZE = 5  # after the length field

SUCCESS_RESPONSE = 0
ERROR_RESPONSE = 1
SERVER_FAILURE = 2

# The Java server's netty.server.max-request-size (the 4 length bytes count towards it).
MAX_REQUEST_SIZE = 100 * 1024 * 1024


def encode_request(api_key: int, api_version: int, request_id: int, body: bytes) -> bytes:
    return REQUEST_HEADER.pack(REQUEST_HEADER_SIZE + len(body), api_key, api_version, request_id) + body


def request_header(frame, pos: int = 0) -> tuple[int, int, int]:
    """(api_key, api_version, request_id) of a request frame whose length prefix was already removed."""
    return REQUEST_HEADER_AFTER_LENGTH.unpack_from(frame, pos)


def encode_response(request_id: int, body: bytes, kind: int = SUCCESS_RESPONSE) -> bytes:
    return RESPONSE_HEADER.pack(RESPONSE_HEADER_SIZE + len(body), kind, request_id) + body


def response_header_prefix(request_id: int, body_len: int, kind: int = SUCCESS_RESPONSE) -> bytes:
    """The 9 bytes in front of a body the caller writes separately (zero-copy fetch responses)."""
    return RESPONSE_HEADER.pack(RESPONSE_HEADER_SIZE + body_len, kind, request_id)


def encode_error_response(request_id: int, error_code: int, message: str | None) -> bytes:
    from .fluss_api_pb2 import ErrorResponse

    err = ErrorResponse(error_code=error_code)
    if message:
        err.error_message = message
    return encode_response(request_id, err.SerializeToString(), ERROR_RESPONSE)


def encode_server_failure(error_code: int, message: str) -> bytes:
    """Only sent right before closing; pyfluss reads 4 body bytes as a request id, so never leave
    the message empty (docs/contributing/protocol.md §1.3)."""
    from .fluss_api_pb2 import ErrorResponse

    body = ErrorResponse(error_code=error_code, error_message=message or "server failure").SerializeToString()
    return LENGTH.pack(1 + len(body)) + bytes([SERVER_FAILURE]) + body


def response_kind_and_id(frame, pos: int = 0) -> tuple[int, int]:
    """(type, request_id) of a response frame without its length prefix; request_id is -1 for type 2."""
    kind = frame[pos]
    if kind == SERVER_FAILURE:
        return kind, -1
    return kind, struct.unpack_from(">i", frame, pos + 1)[0]
