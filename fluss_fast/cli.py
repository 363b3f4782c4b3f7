"""`fluss-fast` command line: `server`, `cluster`, `demo`, `bench`, `help`, `--version`."""
from __future__ import annotations

import os
import platform
import sys

USAGE = """usage: fluss-fast {server,cluster,demo,bench,help} [options]
       fluss-fast --version

  server   run the embedded Fluss-protocol server
  cluster  run a real Apache Fluss cluster (the Java servers, from Maven Central) on this machine
  demo     start a server (or use --bootstrap-servers), ingest a data set, read it back, report speed
  bench    head-to-head benchmark of fluss_fast against pyfluss on the same server
  help     this text; `fluss-fast help COMMAND` shows the options of COMMAND

  --version  versions of fluss_fast, Python and pyarrow, and which compiled extensions are loaded
"""

COMMANDS = ("server", "cluster", "demo", "bench")


def extension_summary() -> str:
    """One phrase saying whether the Cython extensions are in use, naming the ones that are not."""
    from .codec import _select

    report = _select.load_report()
    missing = [name for name, ok in report.items() if not ok]
    if _select.NO_EXTENSIONS:
        return (f"compiled extensions: disabled by {_select.ENV_VAR}="
                f"{os.environ.get(_select.ENV_VAR)} (pure-Python twins)")
    if not report:
        return "compiled extensions: none found (pure-Python twins)"
    if not missing:
        return f"compiled extensions: all {len(report)} loaded"
    return (f"compiled extensions: {len(report) - len(missing)} of {len(report)} loaded; "
            f"pure-Python twins for {', '.join(missing)}")


def version_info() -> dict:
    import pyarrow

    from . import __version__

    return {"fluss_fast": __version__, "python": f"{platform.python_version()} {platform.python_implementation()}",
            "pyarrow": pyarrow.__version__, "extensions": extension_summary()}


def version_line() -> str:
    """The one-line form the demo and bench print in their headers."""
    v = version_info()
    return f"fluss_fast {v['fluss_fast']}, Python {v['python']}, pyarrow {v['pyarrow']}; {v['extensions']}"


def version_text() -> str:
    from . import __file__ as pkg_file

    v = version_info()
    return (f"fluss_fast {v['fluss_fast']} ({os.path.dirname(pkg_file)})\n"
            f"Python {v['python']} ({sys.executable})\n"
            f"pyarrow {v['pyarrow']}\n"
            f"{v['extensions']}")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print(USAGE, file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    if command in ("-h", "--help"):
        print(USAGE)
        return 0
    if command in ("-V", "--version", "version"):
        print(version_text())
        return 0
    if command == "help":
        if rest and rest[0] in COMMANDS:
            command, rest = rest[0], ["--help"]
        elif rest:
            print(f"fluss-fast help: unknown command {rest[0]!r}\n\n{USAGE}", file=sys.stderr)
            return 2
        else:
            print(USAGE)
            return 0
    if command == "server":
        from .lake.service import tiering_companion
        from .server.cli import main as serve

        def run(argv):
            return serve(argv, companions=[tiering_companion])
    elif command == "cluster":
        from .cluster.cli import main as run
    elif command == "demo":
        from .bench.demo import main as run
    elif command == "bench":
        from .bench.cli import main as run
    else:
        print(f"fluss-fast: unknown command {command!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    try:
        return run(rest) or 0
    except SystemExit as exc:  # argparse's --help and usage errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    except BrokenPipeError:
        # The reader went away (`fluss-fast bench --list | head`): not an error worth a traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
