"""Keys and KV: key encoding and bucketing (``keys``, ``lakekeys``), KV and value record batches
(``kvbatch``, ``valuebatch``), Arrow columns to KV batches (``kvcolumns``) and the server's one-pass
split of a KV batch (``kvsplit``)."""
