"""Client configuration, key for key and message for message like pyfluss 1.0.0's ``Config``.

Values given in the constructor dict must be strings and are parsed the way the Rust core parses
them (``str::parse::<i32>`` and friends), so the same inputs are accepted and rejected with the same
messages. Property setters take typed Python values, checked like PyO3 checks them.
"""
from __future__ import annotations

import operator
from typing import Any

from .errors import FlussError

_I32 = (-(1 << 31), (1 << 31) - 1)
_I64 = (-(1 << 63), (1 << 63) - 1)
_U64 = (0, (1 << 64) - 1)

# kind -> (min, max) for integer kinds
_RANGES = {"i32": _I32, "i64": _I64, "usize": _U64, "u64": _U64}

NO_KEY_ASSIGNERS = ("sticky", "round_robin")
READ_PREFERENCES = ("local-first", "remote-first")

# (key, property name, setter argument name, kind, default)
_OPTIONS = [
    ("bootstrap.servers", "bootstrap_servers", "server", "str", "127.0.0.1:9123"),
    ("writer.request-max-size", "writer_request_max_size", "size", "i32", 10 * 1024 * 1024),
    ("writer.acks", "writer_acks", "acks", "str", "all"),
    ("writer.retries", "writer_retries", "retries", "i32", 2147483647),
    ("writer.batch-size", "writer_batch_size", "size", "i32", 2 * 1024 * 1024),
    ("writer.dynamic-batch-size.enabled", "writer_dynamic_batch_size_enabled", "enabled", "bool", True),
    ("writer.dynamic-batch-size-min", "writer_dynamic_batch_size_min", "size", "i32", 256 * 1024),
    ("writer.batch-timeout-ms", "writer_batch_timeout_ms", "timeout", "i64", 100),
    ("writer.bucket.no-key-assigner", "writer_bucket_no_key_assigner", "value", "assigner", "sticky"),
    ("writer.enable-idempotence", "writer_enable_idempotence", "enabled", "bool", True),
    ("writer.max-inflight-requests-per-bucket", "writer_max_inflight_requests_per_bucket", "num", "usize", 5),
    ("writer.buffer.memory-size", "writer_buffer_memory_size", "size", "usize", 64 * 1024 * 1024),
    ("writer.buffer.wait-timeout-ms", "writer_buffer_wait_timeout_ms", "timeout", "u64", (1 << 64) - 1),
    ("writer.kv-backpressure.max-throttle-ms", "writer_kv_backpressure_max_throttle_ms", "timeout", "u64", 3000),
    ("scanner.remote-log.prefetch-num", "scanner_remote_log_prefetch_num", "num", "usize", 4),
    ("remote-file.download-thread-num", "remote_file_download_thread_num", "num", "usize", 3),
    ("scanner.remote-log.read-concurrency", "scanner_remote_log_read_concurrency", "num", "usize", 4),
    ("scanner.log.max-poll-records", "scanner_log_max_poll_records", "num", "usize", 500),
    ("scanner.log.fetch.max-bytes", "scanner_log_fetch_max_bytes", "bytes", "i32", 16 * 1024 * 1024),
    ("scanner.log.fetch.min-bytes", "scanner_log_fetch_min_bytes", "bytes", "i32", 1),
    ("scanner.log.fetch.wait-max-time-ms", "scanner_log_fetch_wait_max_time_ms", "ms", "i32", 500),
    ("scanner.log.fetch.max-bytes-for-bucket", "scanner_log_fetch_max_bytes_for_bucket", "bytes", "i32", 1024 * 1024),
    ("connect-timeout", "connect_timeout_ms", "timeout", "u64", 15000),
    ("security.protocol", "security_protocol", "protocol", "str", "PLAINTEXT"),
    ("security.sasl.mechanism", "security_sasl_mechanism", "mechanism", "str", "PLAIN"),
    ("security.sasl.username", "security_sasl_username", "username", "str", ""),
    ("security.sasl.password", "security_sasl_password", "password", "str", ""),
    # fluss_fast extension: pyfluss has no request timeout (a silent server hangs it forever,
    # docs/contributing/protocol.md §1.6).
    ("request-timeout", "request_timeout_ms", "timeout", "u64", 30000),
    # fluss_fast extension: threads compressing and decoding Arrow batches, shared by every
    # writer and scanner of the process; 0 = one per core.
    ("client.compression-threads", "client_compression_threads", "num", "usize", 0),
    # Java client options pyfluss 1.0.0 does not have yet (Java default kept): a writer creates the
    # partition a row belongs to if it is missing; false restores the PARTITION_NOT_EXISTS error.
    ("writer.dynamic-create-partition.enabled", "writer_dynamic_create_partition_enabled", "enabled", "bool", True),
    # Java #3606: remote-first asks the tablet server to answer from remote log segments when it has them.
    ("scanner.log.read-preference", "scanner_log_read_preference", "value", "read_preference", "local-first"),
]

# Spellings from the older Python guide; they map onto the current keys.
ALIASES = {
    "request.max.size": "writer.request-max-size",
    "writer.batch.size": "writer.batch-size",
    # the Java client's spellings
    "client.writer.dynamic-create-partition.enabled": "writer.dynamic-create-partition.enabled",
    "client.scanner.log.read-preference": "scanner.log.read-preference",
}

_BY_KEY = {o[0]: o for o in _OPTIONS}
_BY_ATTR = {o[1]: o for o in _OPTIONS}

# Property names from the older stub, kept as aliases of the current ones.
ATTR_ALIASES = {
    "bootstrap_server": "bootstrap_servers",
    "request_max_size": "writer_request_max_size",
}
for _old, _new in ATTR_ALIASES.items():
    _BY_ATTR[_old] = _BY_ATTR[_new]
del _old, _new


def _type_name(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def _parse_int(key: str, value: str, kind: str) -> int:
    """Rust's integer ``FromStr``: optional sign (only '+' for unsigned), ASCII digits, checked range."""
    lo, hi = _RANGES[kind]
    if value == "":
        raise FlussError(f"Invalid value '{value}' for '{key}': cannot parse integer from empty string")
    digits = value
    negative = False
    if digits[0] == "+" and len(digits) > 1:
        digits = digits[1:]
    elif digits[0] == "-" and lo < 0 and len(digits) > 1:
        digits = digits[1:]
        negative = True
    acc = 0
    for ch in digits:
        if not ("0" <= ch <= "9"):
            raise FlussError(f"Invalid value '{value}' for '{key}': invalid digit found in string")
        acc = acc * 10 + (ord(ch) - 48)
        if negative and -acc < lo:
            raise FlussError(f"Invalid value '{value}' for '{key}': number too small to fit in target type")
        if not negative and acc > hi:
            raise FlussError(f"Invalid value '{value}' for '{key}': number too large to fit in target type")
    return -acc if negative else acc


def _parse_assigner(key: str, value: str) -> str:
    low = value.lower() if value.isascii() else value
    if low not in NO_KEY_ASSIGNERS:
        raise FlussError(f"Invalid value '{value}' for '{key}': Matching variant not found")
    return low


def _parse_read_preference(key: str, value: str) -> str:
    # Java parses enum options ignoring case
    low = value.lower() if value.isascii() else value
    if low not in READ_PREFERENCES:
        raise FlussError(f"Invalid value '{value}' for '{key}': expected 'local-first' or 'remote-first'")
    return low


def _parse(key: str, kind: str, value: str):
    if kind == "str":
        return value
    if kind == "bool":
        if value == "true":
            return True
        if value == "false":
            return False
        raise FlussError(f"Invalid value '{value}' for '{key}', expected 'true' or 'false'")
    if kind == "assigner":
        return _parse_assigner(key, value)
    if kind == "read_preference":
        return _parse_read_preference(key, value)
    return _parse_int(key, value, kind)


def _check_setter(option, value):
    key, attr, arg, kind, _ = option
    if kind in ("str", "assigner", "read_preference"):
        if not isinstance(value, str):
            raise TypeError(f"argument '{arg}': '{_type_name(value)}' object is not an instance of 'str'"
                            if value is not None else f"argument '{arg}': 'None' is not an instance of 'str'")
        if kind == "assigner":
            return _parse_assigner(key, value)
        if kind == "read_preference":
            return _parse_read_preference(key, value)
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise TypeError(f"argument '{arg}': 'None' is not an instance of 'bool'" if value is None else
                            f"argument '{arg}': '{_type_name(value)}' object is not an instance of 'bool'")
        return value
    try:
        n = operator.index(value)
    except TypeError:
        # PyO3 names None's type here ('NoneType'), unlike in its instance checks
        raise TypeError(f"argument '{arg}': '{type(value).__name__}' object cannot be interpreted as an "
                        f"integer") from None
    lo, hi = _RANGES[kind]
    if n < lo:
        if lo == 0:
            raise OverflowError("can't convert negative int to unsigned")
        raise OverflowError("out of range integral type conversion attempted")
    if n > hi:
        if kind == "i64":
            raise OverflowError("Python int too large to convert to C long")
        raise OverflowError("out of range integral type conversion attempted")
    return int(n)


class Config:
    """Configuration for Fluss client"""

    __slots__ = ("_values",)

    def __init__(self, properties: dict[str, str] | None = None):
        values = {o[0]: o[4] for o in _OPTIONS}
        if properties is not None:
            if not isinstance(properties, dict):
                raise TypeError(f"argument 'properties': '{_type_name(properties)}' object is not an instance "
                                "of 'dict'")
            for key, value in properties.items():
                if not isinstance(key, str):
                    raise TypeError(f"'{_type_name(key)}' object is not an instance of 'str'"
                                    if key is not None else "'None' is not an instance of 'str'")
                if not isinstance(value, str):
                    raise TypeError(f"'{_type_name(value)}' object is not an instance of 'str'"
                                    if value is not None else "'None' is not an instance of 'str'")
                canonical = ALIASES.get(key, key)
                option = _BY_KEY.get(canonical)
                if option is None:
                    raise FlussError(f"Unknown property: {key}")
                values[canonical] = _parse(key, option[3], value)
        object.__setattr__(self, "_values", values)

    # -- our own helpers (not in pyfluss) --------------------------------------------------------
    def get(self, key: str):
        """Typed value of a property by key (aliases accepted)."""
        canonical = ALIASES.get(key, key)
        if canonical not in _BY_KEY:
            raise FlussError(f"Unknown property: {key}")
        return self._values[canonical]

    def set(self, key: str, value: str) -> None:
        """Set a property from its string form, as the constructor's dict would.

        Args:
            key: A configuration key (aliases accepted).
            value: The value as a string, e.g. ``"5000"`` or ``"true"``.

        Raises:
            FlussError: An unknown key or a value that does not parse.
            TypeError: ``value`` is not a string.
        """
        canonical = ALIASES.get(key, key)
        option = _BY_KEY.get(canonical)
        if option is None:
            raise FlussError(f"Unknown property: {key}")
        if not isinstance(value, str):
            raise TypeError(f"'{_type_name(value)}' object is not an instance of 'str'")
        self._values[canonical] = _parse(key, option[3], value)

    def to_dict(self) -> dict[str, str]:
        """Every property as the string a ``Config(dict)`` round trip accepts."""
        out = {}
        for key, value in self._values.items():
            out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
        return out

    def copy(self) -> Config:
        """An independent copy: changing one does not change the other."""
        clone = Config.__new__(Config)
        object.__setattr__(clone, "_values", dict(self._values))
        return clone

    @property
    def sasl_enabled(self) -> bool:
        """Whether ``security.protocol`` is ``sasl`` (any case)."""
        return self._values["security.protocol"].lower() == "sasl"

    def __reduce__(self):
        return (Config, (self.to_dict(),))

    def __eq__(self, other):
        if not isinstance(other, Config):
            return NotImplemented
        return self._values == other._values

    __hash__ = None  # mutable

    def __setattr__(self, name, value):
        option = _BY_ATTR.get(name)
        if option is None:
            raise AttributeError(f"'Config' object has no attribute '{name}'")
        self._values[option[0]] = _check_setter(option, value)

    def __repr__(self) -> str:
        shown = {k: ("****" if k == "security.sasl.password" and v else v) for k, v in self._values.items()
                 if v != _BY_KEY[k][4]}
        return f"Config({shown!r})"


def _make_property(option):
    key = option[0]

    def getter(self):
        return self._values[key]

    def setter(self, value):
        self._values[key] = _check_setter(option, value)

    default = option[4]
    shown = "2**64 - 1 (no limit)" if default == _U64[1] else repr(default)
    return property(getter, setter, doc=f"The ``{key}`` setting (default ``{shown}``); assigning checks "
                                        f"the type and range as pyfluss does (``TypeError``/``OverflowError``).")


for _option in _OPTIONS:
    setattr(Config, _option[1], _make_property(_option))
for _alias, _target in ATTR_ALIASES.items():
    setattr(Config, _alias, _make_property(_BY_ATTR[_target]))
del _option, _alias, _target
