"""Argument checks and the Rust ``Debug`` spellings in pyfluss's messages, which the value types'
errors repeat so that code matching on them keeps working."""
from __future__ import annotations

import operator

I32 = (-(1 << 31), (1 << 31) - 1)
I64 = (-(1 << 63), (1 << 63) - 1)


def rust_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def rust_list(items) -> str:
    return "[" + ", ".join(rust_str(i) for i in items) + "]"


def rust_set(items) -> str:
    return "{" + ", ".join(rust_str(i) for i in items) + "}"


def rust_map(d: dict) -> str:
    return "{" + ", ".join(f"{rust_str(k)}: {rust_str(v)}" for k, v in d.items()) + "}"


def type_name(value) -> str:
    return "None" if value is None else type(value).__name__


def want_instance(arg: str, value, cls):
    if not isinstance(value, cls):
        raise TypeError(f"argument '{arg}': '{type_name(value)}' object is not an instance of '{cls.__name__}'")
    return value


def want_str(arg: str, value) -> str:
    if not isinstance(value, str):
        if value is None:
            raise TypeError(f"argument '{arg}': 'None' is not an instance of 'str'")
        raise TypeError(f"argument '{arg}': '{type_name(value)}' object is not an instance of 'str'")
    return value


def want_int(arg: str, value, bounds=I64) -> int:
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"argument '{arg}': '{type_name(value)}' object cannot be interpreted as an integer") from None
    if not bounds[0] <= n <= bounds[1]:
        raise OverflowError("out of range integral type conversion attempted")
    return int(n)


def want_str_list(arg: str | None, value) -> list[str]:
    prefix = f"argument '{arg}': " if arg else ""
    if isinstance(value, str):
        raise TypeError(f"{prefix}Can't extract `str` to `Vec`")
    try:
        items = list(value)
    except TypeError:
        raise TypeError(f"{prefix}'{type_name(value)}' object cannot be converted to 'Sequence'") from None
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"{prefix}'{type_name(item)}' object is not an instance of 'str'")
    return items


def want_str_dict(arg: str | None, value) -> dict[str, str]:
    prefix = f"argument '{arg}': " if arg else ""
    if not isinstance(value, dict):
        raise TypeError(f"{prefix}'{type_name(value)}' object is not an instance of 'dict'")
    for k, v in value.items():
        for item in (k, v):
            if not isinstance(item, str):
                raise TypeError(f"{prefix}'{type_name(item)}' object is not an instance of 'str'")
    return dict(value)
