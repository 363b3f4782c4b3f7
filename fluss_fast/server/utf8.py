"""Request strings that are not valid UTF-8.

Python's protobuf hands such a ``string`` field over as ``bytes``, and every handler downstream
expects ``str``. The Java server's protobuf decodes them with U+FFFD replacement characters, so a
bad name then fails name validation (or is simply not found) with the usual error code; doing the
same here gives the same answers instead of an internal TypeError.
"""
from __future__ import annotations

from collections.abc import MutableSequence

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

_STRING = FieldDescriptor.TYPE_STRING
_MESSAGE = FieldDescriptor.TYPE_MESSAGE


def repair_strings(msg: Message) -> int:
    """Decode every ``bytes``-valued string field of ``msg`` (recursively) with replacement
    characters, in place; returns how many were repaired."""
    fixed = 0
    # A repeated field's value is told by its container, which every protobuf implementation
    # registers as a MutableSequence: the descriptor's ``label`` is gone from newer upb releases,
    # and ``is_repeated``, its replacement, is missing from the older ones this package supports.
    for fd, value in msg.ListFields():
        if fd.type == _STRING:
            if isinstance(value, MutableSequence):
                for i, v in enumerate(value):
                    if isinstance(v, bytes):
                        value[i] = v.decode("utf-8", "replace")
                        fixed += 1
            elif isinstance(value, bytes):
                setattr(msg, fd.name, value.decode("utf-8", "replace"))  # a field known by its descriptor only
                fixed += 1
        elif fd.type == _MESSAGE:
            if isinstance(value, MutableSequence):
                for m in value:
                    fixed += repair_strings(m)
            else:
                fixed += repair_strings(value)
    return fixed
