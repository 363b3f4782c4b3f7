"""decode_jobs.InOrder: jobs finish on the codec threads in any order, results apply in submission order."""
import asyncio
import time

from fluss_fast.client.scan.decode_jobs import InOrder
from fluss_fast.client.workers import CodecWorkers


def test_results_apply_in_submission_order_whatever_order_jobs_finish():
    workers = CodecWorkers(4)
    applied = []

    async def main():
        loop = asyncio.get_running_loop()
        everything = loop.create_future()

        def apply(tag, result, exc):
            applied.append((tag, result, type(exc).__name__ if exc else None))
            if len(applied) == 6:
                everything.set_result(None)

        order = InOrder(workers, apply)
        # the first jobs take longest, so they finish last
        delays = [0.2, 0.15, 0.1, 0.05, 0.0, 0.0]
        for k, d in enumerate(delays):
            def job(k=k, d=d):
                time.sleep(d)
                if k == 3:
                    raise ValueError("bad batch")
                return k * 10
            order.submit(loop, job, k)
        assert order.pending == 6
        await asyncio.wait_for(everything, 10)
        assert order.pending == 0

    asyncio.run(main())
    assert applied == [(0, 0, None), (1, 10, None), (2, 20, None), (3, None, "ValueError"),
                       (4, 40, None), (5, 50, None)]
