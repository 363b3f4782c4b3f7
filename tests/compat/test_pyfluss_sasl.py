"""pyfluss 1.0.0 with SASL/PLAIN against the embedded server's SASL listeners."""
from __future__ import annotations

import asyncio

import pyarrow as pa
import pytest

fluss = pytest.importorskip("fluss")

pytestmark = pytest.mark.compat

CALL_TIMEOUT = 20


def sasl_config(bootstrap: str, user: str, password: str) -> fluss.Config:
    return fluss.Config({"bootstrap.servers": bootstrap, "security.protocol": "sasl",
                         "security.sasl.mechanism": "PLAIN", "security.sasl.username": user,
                         "security.sasl.password": password})


async def connect_and_list(config):
    conn = await asyncio.wait_for(fluss.FlussConnection.create(config), CALL_TIMEOUT)
    try:
        return await asyncio.wait_for(conn.get_admin().list_databases(), CALL_TIMEOUT)
    finally:
        await conn.close()


async def expect_auth_failure(config) -> fluss.FlussError:
    with pytest.raises(fluss.FlussError) as e:
        await connect_and_list(config)
    return e.value


async def test_good_credentials(fluss_server, unique_name):
    for user, pw in (("admin", "admin-secret"), ("alice", "alice-pw")):
        assert "fluss" in await connect_and_list(sasl_config(fluss_server.sasl_bootstrap_servers, user, pw))
    # the data path goes through SASL tablet listeners as well
    conn = await fluss.FlussConnection.create(sasl_config(fluss_server.sasl_bootstrap_servers, "admin", "admin-secret"))
    try:
        admin = conn.get_admin()
        path = fluss.TablePath("fluss", unique_name("sasl"))
        await asyncio.wait_for(admin.create_table(path, fluss.TableDescriptor(
            fluss.Schema(pa.schema([("a", pa.int32())])), bucket_count=2)), CALL_TIMEOUT)
        assert await asyncio.wait_for(admin.list_offsets(path, [0, 1], fluss.OffsetSpec.latest()), CALL_TIMEOUT) \
            == {0: 0, 1: 0}
        nodes = await asyncio.wait_for(admin.get_server_nodes(), CALL_TIMEOUT)
        coord = [n for n in nodes if n.server_type == "CoordinatorServer"][0]
        assert f"{coord.host}:{coord.port}" == fluss_server.sasl_bootstrap_servers
        await asyncio.wait_for(admin.drop_table(path), CALL_TIMEOUT)
    finally:
        await conn.close()


async def test_wrong_password(fluss_server):
    err = await expect_auth_failure(sasl_config(fluss_server.sasl_bootstrap_servers, "admin", "wrong"))
    assert err.error_code == 46, err


async def test_unknown_user(fluss_server):
    err = await expect_auth_failure(sasl_config(fluss_server.sasl_bootstrap_servers, "mallory", "admin-secret"))
    assert err.error_code == 46, err


async def test_sasl_client_against_plaintext_listener(fluss_server):
    err = await expect_auth_failure(sasl_config(fluss_server.bootstrap_servers, "admin", "admin-secret"))
    assert err.error_code == 46, err


async def test_plaintext_client_against_sasl_listener(fluss_server):
    with pytest.raises(fluss.FlussError) as e:
        await connect_and_list(fluss.Config({"bootstrap.servers": fluss_server.sasl_bootstrap_servers}))
    assert e.value.error_code == 46
