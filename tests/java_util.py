"""For tests that start a Java Fluss cluster of their own (``fluss_fast.cluster.JavaCluster``)."""
from __future__ import annotations

import os
import shutil

import pytest


def require_java() -> None:
    """Skip a test that starts a Java cluster of its own where java or mvn is missing; CI installs
    both, so there a missing tool fails the test rather than hiding it."""
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    if not missing:
        return
    reason = f"{' and '.join(missing)} not on PATH: a Java Fluss cluster cannot start (JDK 17 and Maven)"
    if os.environ.get("CI"):
        pytest.fail(reason + "; .ci/run installs them")
    pytest.skip(reason)
