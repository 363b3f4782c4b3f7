"""The edges around LogFetcher: other scan modules use its public surface only, and the remote
reader waits for a streamed download's progress instead of polling it."""
from __future__ import annotations

import ast
import asyncio
import threading
import time
from pathlib import Path

from fluss_fast.client.scan import remote

SCAN = Path(__file__).resolve().parents[2] / "fluss_fast" / "client" / "scan"


def _private_fetcher_uses(path: Path) -> list:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        owner = node.value
        name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
        if name in ("fetcher", "_fetcher"):
            out.append(f"{path.name}:{node.lineno}: {name}.{node.attr}")
    return out


def test_scan_modules_use_only_the_fetchers_public_surface():
    found = [u for p in sorted(SCAN.glob("*.py")) if p.name != "fetcher.py" for u in _private_fetcher_uses(p)]
    assert not found, found


def test_streamed_download_progress_wakes_its_waiter():
    async def main():
        loop = asyncio.get_running_loop()
        progress = remote._Progress(loop)

        def download():
            time.sleep(0.05)
            progress.advance(0, ready=True)
            for n in (100, 200, 300):
                time.sleep(0.02)
                progress.advance(n)
            time.sleep(0.02)
            progress.finished()

        t = threading.Thread(target=download)
        t.start()
        try:
            await asyncio.wait_for(progress.wait(lambda: progress.ready), 5)
            await asyncio.wait_for(progress.wait(lambda: progress.written >= 200), 5)
            assert progress.written >= 200
            # a condition that never holds ends with the download
            await asyncio.wait_for(progress.wait(lambda: progress.written > 10_000), 5)
            assert progress.done and progress.written == 300
        finally:
            t.join()

    asyncio.run(main())


def test_batch_end_reads_the_length_field():
    view = memoryview(bytes(8) + (100).to_bytes(4, "little") + bytes(20))
    assert remote._batch_end(view, 0, len(view)) == 112
    # the length field has not arrived yet: wait for it first
    assert remote._batch_end(view, 0, 5) == 12
