"""The thread hop under every async client call: a coroutine run on the client's runtime thread
and awaited from the caller's own loop, one at a time and in bursts of 64 (``asyncio.gather``,
as concurrent lookups do). No server: only the hop is timed."""
import asyncio

from fluss_fast.client.runtime import get_runtime

CALLS = 2_000


async def _nop():
    return 1


class RuntimeHop:
    number = 1
    repeat = (1, 5, 20.0)
    warmup_time = 0

    def setup(self):
        self.rt = get_runtime()
        self.loop = asyncio.new_event_loop()

    def teardown(self):
        self.loop.close()

    def time_hop_sequential_2k(self):
        rt = self.rt

        async def go():
            for _ in range(CALLS):
                await rt.run(_nop())

        self.loop.run_until_complete(go())

    def time_hop_bursts_of_64_2k(self):
        rt = self.rt

        async def go():
            for _ in range(CALLS // 64):
                await asyncio.gather(*(rt.run(_nop()) for _ in range(64)))

        self.loop.run_until_complete(go())
