"""`fluss-fast` command line: `server`, `demo`, `bench`."""
from __future__ import annotations

import sys

USAGE = """usage: fluss-fast {server,demo,bench} [options]

  server   run the embedded Fluss-protocol server
  demo     start a server (or use --bootstrap-servers), ingest a data set, read it back, report speed
  bench    head-to-head benchmark of fluss_fast against pyfluss on the same server
"""


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "server":
        from .server.cli import main as run
    elif command == "demo":
        from .bench.demo import main as run
    elif command == "bench":
        from .bench.cli import main as run
    else:
        print(f"fluss-fast: unknown command {command!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    return run(rest) or 0
