"""Which event loop the client runtime thread and the embedded server run on.

uvloop when it is installed (it is a dependency on Linux and macOS); ``FLUSS_FAST_EVENT_LOOP=asyncio``
forces the standard library's loop, so that code paths uvloop hides (its transports close, buffer and
report errors differently) can be run and tested; ``FLUSS_FAST_EVENT_LOOP=uvloop`` insists on uvloop and
fails if it is missing, so a run that asked for it cannot quietly measure or test the other loop.
The variable is read when a loop is made, so a server child process inherits the choice.
"""
from __future__ import annotations

import asyncio
import os

from .errors import FlussError

ENV_VAR = "FLUSS_FAST_EVENT_LOOP"
CHOICES = ("asyncio", "uvloop")


def loop_choice() -> str:
    """The requested loop: "asyncio", "uvloop", or "" (uvloop if installed, else asyncio)."""
    value = os.environ.get(ENV_VAR, "").strip().lower()
    if value and value not in CHOICES:
        raise FlussError(f"{ENV_VAR}={os.environ[ENV_VAR]!r} is not one of {', '.join(CHOICES)}")
    return value


def new_event_loop() -> asyncio.AbstractEventLoop:
    choice = loop_choice()
    if choice == "asyncio":
        return asyncio.new_event_loop()
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise FlussError(f"{ENV_VAR}=uvloop but uvloop is not installed") from None
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()
