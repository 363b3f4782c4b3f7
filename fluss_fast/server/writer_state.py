"""Idempotence state of a bucket's writers: the last few batches of each, and the
``{base}.writers.json`` snapshot a roll leaves beside a new segment so that recovery replays only
the batches after it (docs/contributing/formats.md §9.1)."""
from __future__ import annotations

import json
import logging
import os
from collections import deque

log = logging.getLogger("fluss_fast.server.log")

WRITER_STATE_BATCHES = 5                 # batches remembered per writer for duplicate detection
# batch sequences are int32 and wrap from here to 0
_SEQUENCE_MAX = (1 << 31) - 1


class WriterState:
    """Idempotence state of one writer on one bucket: its last few batches."""

    __slots__ = ("batches",)

    def __init__(self):
        # (batch_sequence, first_offset, last_offset, commit_timestamp), oldest first
        self.batches: deque = deque(maxlen=WRITER_STATE_BATCHES)

    @property
    def last_sequence(self) -> int:
        return self.batches[-1][0] if self.batches else -1

    def find(self, seq: int):
        for entry in self.batches:
            if entry[0] == seq:
                return entry
        return None


def in_sequence(last_seq: int, seq: int) -> bool:
    return seq == last_seq + 1 or (seq == 0 and last_seq == _SEQUENCE_MAX)


def expected_last_sequence(first_seq: int, batch_count: int) -> int:
    """The sequence the last of ``batch_count`` consecutive batches starting at ``first_seq`` has."""
    return (first_seq + batch_count - 1) % (_SEQUENCE_MAX + 1)


def _snapshot_path(directory: str, base: int) -> str:
    return os.path.join(directory, f"{base:020d}.writers.json")


def load_snapshot(directory: str, base: int, name: str) -> dict[int, WriterState] | None:
    """The writer state as of segment ``base``, or None when there is no usable snapshot (then
    recovery rebuilds it from the closed segments). ``name``: the bucket, for the warning."""
    path = _snapshot_path(directory, base)
    try:
        with open(path, "rb") as f:
            obj = json.loads(f.read())
        out = {}
        for wid, batches in obj["writers"].items():
            st = WriterState()
            for b in batches:
                st.batches.append(tuple(int(x) for x in b))
            out[int(wid)] = st
        return out
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as e:
        log.warning("%s: ignoring unreadable writer snapshot %s: %s", name, path, e)
        return None


def write_snapshot(directory: str, base: int, writers: dict[int, WriterState]) -> None:
    path = _snapshot_path(directory, base)
    data = json.dumps({"writers": {str(w): [list(b) for b in st.batches]
                                   for w, st in writers.items()}}).encode()
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
