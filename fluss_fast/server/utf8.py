"""Request strings that are not valid UTF-8.

Python's protobuf hands such a ``string`` field over as ``bytes``, and every handler downstream
expects ``str``. The Java server's protobuf decodes them with U+FFFD replacement characters, so a
bad name then fails name validation (or is simply not found) with the usual error code; doing the
same here gives the same answers instead of an internal TypeError.
"""
from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor

_STRING = FieldDescriptor.TYPE_STRING
_MESSAGE = FieldDescriptor.TYPE_MESSAGE


def _is_repeated(fd) -> bool:
    # upb descriptors dropped ``label`` in newer protobuf releases
    rep = getattr(fd, "is_repeated", None)
    if rep is not None:
        return rep if isinstance(rep, bool) else rep()
    return fd.label == FieldDescriptor.LABEL_REPEATED


def repair_strings(msg) -> int:
    """Decode every ``bytes``-valued string field of ``msg`` (recursively) with replacement
    characters, in place; returns how many were repaired."""
    fixed = 0
    for fd, value in msg.ListFields():
        if fd.type == _STRING:
            if _is_repeated(fd):
                for i, v in enumerate(value):
                    if isinstance(v, bytes):
                        value[i] = v.decode("utf-8", "replace")
                        fixed += 1
            elif isinstance(value, bytes):
                setattr(msg, fd.name, value.decode("utf-8", "replace"))
                fixed += 1
        elif fd.type == _MESSAGE:
            if _is_repeated(fd):
                for m in value:
                    fixed += repair_strings(m)
            else:
                fixed += repair_strings(value)
    return fixed
