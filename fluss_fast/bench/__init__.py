"""Benchmarks and the demo: ``fluss-fast bench`` (``bench.cli.main``), ``fluss-fast demo``
(``bench.demo.main``), the seeded data sets (``bench.datasets``), the client scenarios
(``bench.harness`` and the scenario modules it names) and the no-client ceiling (``bench.ceiling``)."""
