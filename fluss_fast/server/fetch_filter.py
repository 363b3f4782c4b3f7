"""FetchLog filter push-down: the batches of a read whose statistics rule the fetch's predicate out
are left out of the answer, as Java 1.0's ``LogSegment.readWithFilter`` does.

* Only ARROW tables are filtered (Java: the other formats are always V0, without statistics).
* A batch without statistics (V0, an empty block, or one that cannot be read) is sent.
* A predicate the server cannot use (filter schema unknown, a column id or literal type that does
  not fit) leaves the fetch unfiltered, as Java falls back to an unfiltered read.
* When every batch read was skipped, the answer has no records and ``filtered_end_offset`` = the
  offset after the last batch looked at, so the client moves on without reading them again; when
  the batches after the last one sent were all skipped, the same offset tells the client to
  resume past them.
* Projection drops statistics from the batches it sends; the filter is evaluated on the stored
  batches first.
"""
from __future__ import annotations

import logging

from ..codec.log import batchstats, logbatch
from ..codec.log.batchfilter import BatchFilter, FilterError

_log = logging.getLogger(__name__)


def filter_of(entry, treq) -> BatchFilter | None:
    """The filter of one table of a FetchLog request, or None to read it unfiltered."""
    if entry is None or not treq.HasField("filter_predicate"):
        return None
    if entry.descriptor.log_format != "ARROW":
        return None
    schema_id = treq.filter_schema_id if treq.HasField("filter_schema_id") else -1
    schema = entry.schemas.get(schema_id)
    if schema is None:
        _log.warning("filter schema id %s unknown for table %s: fetch answered unfiltered",
                     schema_id, entry.path)
        return None
    try:
        return BatchFilter.from_pb(treq.filter_predicate, schema, schema_id)
    except (FilterError, ValueError, TypeError) as e:
        _log.warning("unusable filter for table %s (%s): fetch answered unfiltered", entry.path, e)
        return None


def batch_may_match(bfilter: BatchFilter, entry, data, h) -> bool:
    """Whether batch ``h`` of ``data`` may hold matching rows (True when it has no statistics)."""
    if h.magic == 0 or h.statistics_length <= 0:
        return True
    schema = entry.schemas.get(h.schema_id)
    if schema is None:
        return True
    fixed = h.header_size - h.statistics_length
    start = h.position + fixed
    try:
        stats = batchstats.decode_statistics(data, schema.types, start, start + h.statistics_length)
        return bfilter.may_match(h.record_count, stats, schema)
    except Exception as e:  # noqa: BLE001 - as Java: one bad batch never fails the fetch, it is sent
        _log.warning("unreadable statistics in the batch at offset %s of table %s (%s): sent unfiltered",
                     h.base_offset, entry.path, e)
        return True


def keep_matching(bfilter: BatchFilter, entry, data):
    """``(kept, filtered_end_offset)``: the bytes of the whole batches of ``data`` that may match
    (one bytes object, or ``data`` itself when nothing was skipped), and the offset after the last
    batch when the batches after the last one kept (or all of them) were skipped, else None."""
    kept = []
    last_kept_next = None
    last_next = None
    skipped = False
    for h in logbatch.iter_batches(data):
        if h.position + h.total_size > len(data):
            break  # a batch cut at the read's end: left for the next fetch, as without a filter
        last_next = h.next_offset
        if batch_may_match(bfilter, entry, data, h):
            kept.append((h.position, h.position + h.total_size))
            last_kept_next = last_next
        else:
            skipped = True
    if not skipped:
        return data, None
    mv = memoryview(data)
    out = b"".join(mv[s:e] for s, e in kept)
    trailing = last_next is not None and (last_kept_next is None or last_next > last_kept_next)
    return out, (last_next if trailing else None)
