"""An embedded server with a Paimon warehouse (``datalake.format=paimon``), one per test."""
from __future__ import annotations

import pytest

pytest.importorskip("pypaimon", reason="the lake tests need pypaimon: pip install 'fluss-fast[lake]', "
                    "or .ci/install_pypaimon.sh beside a newer pyarrow")


@pytest.fixture
def lake_server(tmp_path):
    from fluss_fast.server.local import LocalServer
    from fluss_fast.server.settings import Settings

    settings = Settings({"datalake.format": "paimon", "datalake.paimon.metastore": "filesystem",
                         "datalake.paimon.warehouse": str(tmp_path / "warehouse")})
    # on a thread of its own: writers block the caller's thread while they look partitions up
    with LocalServer(data_dir=str(tmp_path / "data"), settings=settings) as srv:
        yield srv


@pytest.fixture
async def lake_conn(lake_server):
    import fluss_fast

    c = await fluss_fast.FlussConnection.create(fluss_fast.Config({"bootstrap.servers": lake_server.bootstrap_servers}))
    await c.get_admin().create_database("lake_db", ignore_if_exists=True)
    yield c
    await c.close()
