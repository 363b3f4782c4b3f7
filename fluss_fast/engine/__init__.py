"""What the engine integrations (``fluss_fast.spark``, ``fluss_fast.ray``) share: one connection per
worker process, offset ranges fixed at planning and how one is read, the virtual tables' change
reads. Nothing here imports an engine, so each integration pulls in only its own.
"""
