"""Log scanning: the TableScan builder, LogScanner / BatchScanner and what they return.

The read path, in modules of one concern each:

* ``fetcher.py``: the fetch loop (``LogFetcher``; the wire form of its answers is ``rpc/wire.py``'s
  ``parse_fetch_response``): what to fetch from whom, errors and retries, handing out;
* ``buckets.py``: each bucket's positions and the decoded results waiting to be handed out;
* ``decode.py``: what one scanner reads (``ScanSpec``) and how fetched records become chunks;
* ``decode_jobs.py``: decoding on the codec worker threads, results applied in arrival order;
* ``offsets.py``: ListOffsets with retries (LATEST subscriptions, where a bounded read stops);
* ``retry.py``: which per-bucket error codes re-resolve the leader and which are retried;
* ``remote.py``: buckets whose data lies in remote (tiered) segments;
* ``records.py`` / ``convert.py``: what a poll hands out (records, row dicts, Arrow batches).

How data flows:

* ``send_fetches`` groups the fetchable buckets (subscribed, not in a request already, fewer than
  ``_MAX_AHEAD`` results waiting or being decoded (``_MAX_AHEAD_POLL`` for a poll loop), not
  backing off, leader known, not past the end of a bounded read) by leader node and sends them in up
  to ``_MAX_REQUESTS_PER_NODE`` FetchLogs per node. Several requests per node keep the server and the socket busy while
  a response is in transit or being decoded; each request gets ``max-bytes / requests`` so that what is in flight to
  one node stays within ``scanner.log.fetch.max-bytes``.
* When a response arrives its batch headers are scanned first: that fixes each bucket's next fetch
  position (``fetch_pos``, ahead of the user's position while results wait), and the next FetchLog
  goes out at once. Only then is the response decoded: CRC (skipped when the server projected,
  since it does not recompute it), Arrow IPC straight over the response buffer, the exact filter,
  the user's column order. Large responses are decoded on the shared codec threads
  (client/workers.py; pyarrow releases the GIL while it decompresses), so the runtime loop keeps
  receiving meanwhile and several responses decompress at once; results are put back in submission
  order, a ``_Completed`` per bucket, and buffered. Small (polling) responses are decoded on the loop when nothing is
  queued.
* ``poll`` drains buffered results and moves each bucket's position as its rows are handed out.
* The server sends only the first batch of a request's first bucket whole when it exceeds the
  per-bucket byte budget; a bucket that got a partial batch goes first next time and asks for
  that batch's size (remembered as the bucket's floor), so large batches cost no extra rounds.
* Bounded reads (``to_arrow``, the batch reader) hold everything in memory anyway, so unless the
  user changed ``scanner.log.fetch.max-bytes-for-bucket`` a bucket's budget starts at twice it
  and doubles with every answer, up to its share of the request's bytes and at most
  ``_BOUNDED_BUCKET_BYTES``: the first answers come quickly, the later ones in fewer, larger
  round trips. (Large answers are decoded in parts on every core, so a first answer of a few
  batches keeps both cores busy while the next ones travel.)
"""
from .builder import TableScan
from .limit import BatchScanner
from .records import RecordBatch, ScanRecord, ScanRecords
from .scanner import LogScanner

__all__ = ["TableScan", "LogScanner", "BatchScanner", "ScanRecord", "ScanRecords", "RecordBatch"]
