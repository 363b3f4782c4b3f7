"""Partition time values of auto-partitioned tables (docs/contributing/protocol.md §7.6): Java-style time formats, time
units and zones."""
from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

DEFAULT_TIME_FORMATS = {"YEAR": "yyyy", "QUARTER": "yyyyQ", "MONTH": "yyyyMM", "DAY": "yyyyMMdd",
                         "HOUR": "yyyyMMddHH"}
_UNIT_FIELDS = {"YEAR": ["y"], "QUARTER": ["y", "Q"], "MONTH": ["y", "M"], "DAY": ["y", "M", "d"],
                "HOUR": ["y", "M", "d", "H"]}
_FIELD_WIDTH = {"y": 4, "Q": 1, "M": 2, "d": 2, "H": 2}


def compile_time_format(fmt: str, unit: str) -> list:
    """A Java DateTimeFormatter pattern restricted to what sorts like time: fixed-width year, quarter,
    month, day, hour from largest to smallest, plus literals. Returns tokens: ('y'|'Q'|'M'|'d'|'H', width)
    or ('lit', text)."""
    tokens, fields = [], []
    i, n = 0, len(fmt)
    while i < n:
        ch = fmt[i]
        if ch == "'":
            if i + 1 < n and fmt[i + 1] == "'":
                tokens.append(("lit", "'"))
                i += 2
                continue
            j = fmt.find("'", i + 1)
            if j < 0:
                raise ValueError(f"Time format '{fmt}' has an unterminated quote")
            tokens.append(("lit", fmt[i + 1:j]))
            i = j + 1
            continue
        if ch in "[]":
            raise ValueError(f"Time format '{fmt}' must not contain optional sections ('[' or ']').")
        if not ch.isascii() or not ch.isalpha():
            tokens.append(("lit", ch))
            i += 1
            continue
        j = i
        while j < n and fmt[j] == ch:
            j += 1
        if ch not in _FIELD_WIDTH:
            raise ValueError(f"Time format '{fmt}' contains unsupported time field '{ch}'.")
        if j - i != _FIELD_WIDTH[ch]:
            raise ValueError(f"Time format '{fmt}' must use fixed-width field '{ch * _FIELD_WIDTH[ch]}'.")
        tokens.append((ch, j - i))
        fields.append(ch)
        i = j
    if fields != _UNIT_FIELDS[unit]:
        raise ValueError(f"Time format '{fmt}' must contain exactly the fields {''.join(_UNIT_FIELDS[unit])} "
                         f"in order from the largest to the smallest unit for time unit {unit}.")
    return tokens


def format_time(tokens: list, dt: datetime) -> str:
    out = []
    for kind, arg in tokens:
        if kind == "lit":
            out.append(arg)
        elif kind == "y":
            out.append(f"{dt.year:04d}")
        elif kind == "Q":
            out.append(str((dt.month - 1) // 3 + 1))
        elif kind == "M":
            out.append(f"{dt.month:02d}")
        elif kind == "d":
            out.append(f"{dt.day:02d}")
        elif kind == "H":
            out.append(f"{dt.hour:02d}")
    return "".join(out)


def parses_as_time(tokens: list, value: str) -> bool:
    pos = 0
    parts = {}
    for kind, arg in tokens:
        if kind == "lit":
            if not value.startswith(arg, pos):
                return False
            pos += len(arg)
            continue
        piece = value[pos:pos + arg]
        if len(piece) != arg or not piece.isdigit():
            return False
        parts[kind] = int(piece)
        pos += arg
    if pos != len(value):
        return False
    try:
        month = parts.get("M", 1)
        if "Q" in parts and not 1 <= parts["Q"] <= 4:
            return False
        datetime(parts.get("y", 2000), month, parts.get("d", 1), parts.get("H", 0))
    except ValueError:
        return False
    return True


def _add_months(dt: datetime, months: int) -> datetime:
    total = dt.year * 12 + (dt.month - 1) + months
    year, month = divmod(total, 12)
    month += 1
    # clamp the day the way java.time does (Jan 31 + 1 month = Feb 28/29)
    for day in (dt.day, 30, 29, 28):
        try:
            return dt.replace(year=year, month=month, day=min(dt.day, day))
        except ValueError:
            continue
    raise ValueError("unreachable")


def shift_time(dt: datetime, unit: str, offset: int) -> datetime:
    if unit == "YEAR":
        return _add_months(dt, 12 * offset)
    if unit == "QUARTER":
        return _add_months(dt, 3 * offset)
    if unit == "MONTH":
        return _add_months(dt, offset)
    if unit == "DAY":
        return dt + timedelta(days=offset)
    return dt + timedelta(hours=offset)


def time_zone(name: str | None):
    if not name:
        return datetime.now().astimezone().tzinfo
    if name.upper() in ("UTC", "GMT", "Z"):
        return UTC
    m = re.match(r"^(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?$", name)
    if m:
        delta = timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0))
        return timezone(-delta if m.group(1) == "-" else delta)
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)
