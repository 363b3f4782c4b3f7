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


def test_a_group_of_jobs_wakes_its_loop_once_with_every_outcome_in_order():
    """``submit_group``: the parts of one answer report to the loop together, once, after the
    last of them finished on whichever thread; outcomes in job order, a failure carried along."""
    workers = CodecWorkers(3)
    calls = []

    async def main():
        loop = asyncio.get_running_loop()
        got = loop.create_future()
        wakeups = 0
        real = loop.call_soon_threadsafe

        def counting(cb, *args):
            nonlocal wakeups
            wakeups += 1
            return real(cb, *args)

        loop.call_soon_threadsafe = counting

        def done(outcomes):
            calls.append([(r, type(e).__name__ if e else None) for r, e in outcomes])
            got.set_result(None)

        def job(k, d):
            time.sleep(d)
            if k == 2:
                raise KeyError("part 2")
            return k

        workers.submit_group(loop, [lambda k=k, d=d: job(k, d) for k, d in
                                    enumerate([0.15, 0.0, 0.05, 0.1, 0.0])], done)
        await asyncio.wait_for(got, 10)
        await asyncio.sleep(0.05)
        return wakeups

    assert asyncio.run(main()) == 1
    assert calls == [[(0, None), (1, None), (None, "KeyError"), (3, None), (4, None)]]
