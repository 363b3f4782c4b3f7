"""The tiering that ``fluss-fast server -c datalake.format=paimon`` runs beside the embedded server.

Java runs tiering as a Flink job next to the cluster; the embedded server runs the same client-side
tiering (``TieringService``) in its own process and event loop, connected to its own listener, so a
data-lake table is tiered at its ``table.datalake.freshness`` with no job to submit.
"""
from __future__ import annotations

import logging
from typing import Any

from ..config import Config

__all__ = ["tiering_companion"]

log = logging.getLogger("fluss_fast.lake")


def tiering_companion(server: Any):
    """A coroutine that tiers the server's data-lake tables until cancelled, or ``None`` when the
    server has no data lake (no ``datalake.format``)."""
    fmt = server.settings.get("datalake.format")
    if not fmt:
        return None
    if str(fmt).strip().lower() != "paimon":
        log.error("datalake.format=%s: only paimon is tiered; tables stay in the log", fmt)
        return None
    return _run(server.bootstrap_servers)


async def _run(bootstrap: str) -> None:
    from ..client.connection import FlussConnection
    from .tiering import TieringService

    try:
        import pypaimon  # noqa: F401
    except ImportError:
        log.error("datalake.format=paimon needs pypaimon to tier tables (pip install 'fluss-fast[lake]'); "
                  "tables stay in the log")
        return
    conn = await FlussConnection.create(Config({"bootstrap.servers": bootstrap}))
    try:
        await TieringService(conn).run()
    finally:
        await conn.close()
