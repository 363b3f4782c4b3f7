"""The server's pool of buffers for big request frames: ``rpc/frame_pool.py``, shared with the
client's receive side."""
from ..rpc.frame_pool import FramePool

__all__ = ["FramePool"]
