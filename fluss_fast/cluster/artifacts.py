"""The jars of a Fluss release, resolved with Maven and cached per version.

A Fluss distribution's ``lib/`` is the shaded ``fluss-server`` jar (which carries ZooKeeper, Netty,
Arrow, RocksDB and slf4j-api under its own packages) plus four log4j 2 jars. Maven resolves exactly
those through a throwaway pom, so users need ``java`` and ``mvn`` and nothing that is not on Maven
Central.
"""
from __future__ import annotations

import os
import shutil
import subprocess

from .errors import ClusterError

#: The newest release that works with fluss_fast (the default of ``--fluss-version``).
DEFAULT_FLUSS_VERSION = "0.9.1-incubating"

#: The log4j version each Fluss release builds its distribution with (its root pom's ``log4j.version``);
#: a release not listed here gets the newest one listed.
LOG4J_VERSIONS: dict[str, str] = {"0.9.1-incubating": "2.25.4"}

_LOG4J_ARTIFACTS = ("log4j-api", "log4j-core", "log4j-slf4j-impl", "log4j-1.2-api")

# Maven 3.8's own default dependency plugin predates copy-dependencies' -DexcludeTransitive behaviour
# we rely on; pinning keeps every machine on the same one.
_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"

_COMPLETE = ".complete"


def cache_root() -> str:
    """``$FLUSS_FAST_CACHE``, else ``$XDG_CACHE_HOME/fluss-fast``, else ``~/.cache/fluss-fast``."""
    explicit = os.environ.get("FLUSS_FAST_CACHE")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "fluss-fast")


def _pom(version: str, log4j: str) -> str:
    deps = [("org.apache.fluss", "fluss-server", version)]
    deps += [("org.apache.logging.log4j", a, log4j) for a in _LOG4J_ARTIFACTS]
    body = "".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>\n"
        for g, a, v in deps)
    return ("<project xmlns=\"http://maven.apache.org/POM/4.0.0\">\n"
            "  <modelVersion>4.0.0</modelVersion>\n"
            "  <groupId>fluss-fast.cluster</groupId><artifactId>fluss-lib</artifactId>"
            f"<version>{version}</version><packaging>pom</packaging>\n"
            f"  <dependencies>\n{body}  </dependencies>\n</project>\n")


def require_tool(name: str, purpose: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ClusterError(f"`{name}` is not on PATH; {purpose}")
    return path


def resolve_jars(version: str = DEFAULT_FLUSS_VERSION, cache_dir: str = "") -> list[str]:
    """The classpath of Fluss ``version``: downloaded once with ``mvn``, then read from the cache.

    Raises ``ClusterError`` with one line when ``mvn`` is missing or the download fails (an unknown
    version, no network); a failed download leaves nothing half-written behind in the cache.
    """
    lib = os.path.join(cache_dir or cache_root(), f"fluss-{version}", "lib")
    if not os.path.exists(os.path.join(lib, _COMPLETE)):
        _download(version, lib)
    jars = sorted(os.path.join(lib, f) for f in os.listdir(lib) if f.endswith(".jar"))
    if not any(os.path.basename(j).startswith("fluss-server-") for j in jars):
        raise ClusterError(f"the cache {lib} has no fluss-server jar; remove it and try again")
    return jars


def _download(version: str, lib: str) -> None:
    mvn = require_tool("mvn", "fluss-fast cluster downloads the Fluss jars with Maven (apt-get install maven)")
    log4j = LOG4J_VERSIONS.get(version) or LOG4J_VERSIONS[DEFAULT_FLUSS_VERSION]
    work = lib + ".partial"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    with open(os.path.join(work, "pom.xml"), "w", encoding="utf-8") as f:
        f.write(_pom(version, log4j))
    cmd = [mvn, "-q", "-B", "-f", os.path.join(work, "pom.xml"), f"{_DEPENDENCY_PLUGIN}:copy-dependencies",
           "-DincludeScope=runtime", "-DexcludeTransitive=true", f"-DoutputDirectory={work}"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        reason = _first_error(proc.stdout)
        raise ClusterError(f"could not download Fluss {version} with Maven: {reason}")
    os.remove(os.path.join(work, "pom.xml"))
    open(os.path.join(work, _COMPLETE), "w").close()
    shutil.rmtree(lib, ignore_errors=True)
    os.makedirs(os.path.dirname(lib), exist_ok=True)
    os.replace(work, lib)


def _first_error(output: str) -> str:
    for line in output.splitlines():
        text = line.replace("\x1b[0m", "").replace("\x1b[1;31m", "").replace("\x1b[m", "").strip()
        if "ERROR" in text and "Failed to execute goal" in text:
            return text.split("Failed to execute goal", 1)[1].strip()[:400]
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    return lines[0][:400] if lines else "mvn exited without saying why"
