"""Fixtures of the fault suite: a server with the fault proxy in front of it."""
from __future__ import annotations

import pytest

from fault.kinds import Target
from fault.proxy import FaultProxy


@pytest.fixture
def target(start_server):
    srv = start_server(sasl=False)
    proxy = FaultProxy(srv.bootstrap_servers).start()
    yield Target(srv, proxy)
    proxy.close()


@pytest.fixture
def target3(start_server):
    srv = start_server(sasl=False, tablet_servers=3)
    proxy = FaultProxy(srv.bootstrap_servers).start()
    yield Target(srv, proxy)
    proxy.close()
