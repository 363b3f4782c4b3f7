"""Server settings given as the Java server's own keys (``-c KEY=VALUE``, ``--config FILE``).

Values use the Java notation: memory sizes like ``1mb``, ``4k``, ``1024m``, ``10 MB`` or plain bytes;
durations like ``1s``, ``500ms``, ``1 min``, ``7d`` or plain milliseconds. Keys the embedded server
does not use are kept (a config file written for a Java cluster still loads) and reported once in
the log; a bad value of a key it does use is an error at start-up, naming key and value.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterable

log = logging.getLogger("fluss_fast.server.settings")

_SIZE_UNITS = {
    "": 1, "b": 1, "bytes": 1,
    "k": 1 << 10, "kb": 1 << 10, "kibibytes": 1 << 10,
    "m": 1 << 20, "mb": 1 << 20, "mebibytes": 1 << 20,
    "g": 1 << 30, "gb": 1 << 30, "gibibytes": 1 << 30,
    "t": 1 << 40, "tb": 1 << 40, "tebibytes": 1 << 40,
}
# in milliseconds (fractions for the sub-millisecond units)
_DURATION_UNITS = {
    "ns": 1e-6, "nano": 1e-6, "nanos": 1e-6, "nanosecond": 1e-6, "nanoseconds": 1e-6,
    "us": 1e-3, "µs": 1e-3, "micro": 1e-3, "micros": 1e-3, "microsecond": 1e-3, "microseconds": 1e-3,
    "": 1, "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "m": 60_000, "min": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}
_NUMBER = re.compile(r"^\s*(\d+)\s*([a-zA-Zµ]*)\s*$")


def parse_size(text) -> int:
    """Bytes of a Java memory size (``1mb``, ``4 k``, ``1024``)."""
    if isinstance(text, int):
        return text
    m = _NUMBER.match(str(text))
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _SIZE_UNITS:
        raise ValueError(f"not a memory size: {text!r} (examples: 1024, 4kb, 1mb, 1gb)")
    return int(m.group(1)) * _SIZE_UNITS[unit]


def parse_duration_ms(text) -> int:
    """Milliseconds of a Java duration (``1s``, ``500 ms``, ``1 min``, ``7d``; plain number = ms)."""
    if isinstance(text, (int, float)):
        return int(text)
    m = _NUMBER.match(str(text))
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _DURATION_UNITS:
        raise ValueError(f"not a duration: {text!r} (examples: 500ms, 1s, 1min, 1h, 7d)")
    return int(int(m.group(1)) * _DURATION_UNITS[unit])


def parse_bool(text) -> bool:
    v = str(text).strip().lower()
    if v in ("true", "1", "yes", "on"):
        return True
    if v in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


# key -> (kind, Java default as written in ConfigOptions); None = no default
KNOWN: dict[str, tuple] = {
    "log.segment.file-size": ("size", "1024m"),
    "log.flush.interval-messages": ("int", None),
    "log.index.interval-size": ("size", "4k"),
    "log.retention.check-interval": ("duration", "5min"),
    "log.retention.roll-active-segment.enabled": ("bool", "false"),
    "remote.data.dir": ("str", None),
    "remote.log.task-interval-duration": ("duration", "1min"),
    "remote.log.task-max-upload-segments": ("int", "5"),
    "remote.log-manager.thread-pool-size": ("int", "4"),
    "remote.log.data-transfer-thread-num": ("int", "4"),
    "table.log.ttl": ("duration", "7d"),
    "table.log.local-ttl": ("duration", None),
    "table.log.tiered.local-segments": ("int", "2"),
    "s3.endpoint": ("str", None),
    "s3.access-key": ("str", None),
    "s3.secret-key": ("str", None),
    "s3.region": ("str", None),
    "s3.path-style-access": ("bool", None),
    # the data lake tables are tiered to (docs/guide/lake.md); datalake.paimon.* go to the Paimon catalog
    "datalake.format": ("str", None),
    "datalake.paimon.metastore": ("str", None),
    "datalake.paimon.warehouse": ("str", None),
}
_PARSERS = {"size": parse_size, "duration": parse_duration_ms, "int": int, "bool": parse_bool,
            "str": str}


class Settings:
    """The server's key/value settings with typed getters that fall back to the Java defaults."""

    def __init__(self, values: dict[str, str] | None = None):
        self.values: dict[str, str] = {}
        for k, v in (values or {}).items():
            self.set(k, v)

    def set(self, key: str, value) -> None:
        key = str(key).strip()
        if not key:
            raise ValueError("empty setting key")
        value = str(value).strip()
        spec = KNOWN.get(key)
        if spec is not None:
            try:
                _PARSERS[spec[0]](value)
            except ValueError as e:
                raise ValueError(f"bad value for {key}: {e}") from None
        else:
            log.info("setting %s is not used by the embedded server", key)
        self.values[key] = value

    def raw(self, key: str) -> str | None:
        if key in self.values:
            return self.values[key]
        spec = KNOWN.get(key)
        return spec[1] if spec is not None else None

    def get(self, key: str, default=None):
        """Typed value of ``key``: given, else Java's default, else ``default``."""
        text = self.raw(key)
        if text is None:
            return default
        kind = KNOWN.get(key, ("str",))[0]
        return _PARSERS[kind](text)

    def __contains__(self, key: str) -> bool:
        return key in self.values

    @classmethod
    def from_args(cls, pairs: Iterable[str] = (), files: Iterable[str] = ()) -> Settings:
        """Settings from ``--config`` files (first) and ``-c KEY=VALUE`` pairs (win over files)."""
        out = cls()
        for path in files:
            with open(path, encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    line = line.strip()
                    if not line or line.startswith("#"):
                        continue
                    try:
                        key, value = _split(line)
                        out.set(key, value)
                    except ValueError as e:
                        raise ValueError(f"{path} line {n}: {e}") from None
        for pair in pairs:
            key, value = _split(pair)
            out.set(key, value)
        return out


def _split(text: str):
    """``KEY=VALUE`` or the YAML-ish ``KEY: VALUE`` of Java's server.yaml."""
    for sep in ("=", ":"):
        key, found, value = text.partition(sep)
        if found and key.strip() and "://" not in key + sep + value[:2]:
            return key.strip(), value.strip()
    key, found, value = text.partition("=")
    if not found or not key.strip():
        raise ValueError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()
