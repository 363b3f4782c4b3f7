"""Log batches: the v1 batch framing (``logbatch``), the ARROW / INDEXED / COMPACTED payloads
(``arrowlog``, ``indexedlog``), compressed Arrow IPC bodies (``ipcbody``) and the buffers fetched
bodies are read into (``bodypool``)."""
