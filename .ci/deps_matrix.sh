#!/usr/bin/env bash
# fluss_fast on the oldest or the newest versions of its dependencies that pyproject.toml allows:
#
#   .ci/deps_matrix.sh oldest   # every runtime dependency pinned to its lower bound (`>=X` -> `==X`)
#   .ci/deps_matrix.sh newest   # the newest release of each
#
# A fresh venv gets the built wheel (never the checkout) with the server and pandas extras, then
# `import fluss_fast` and a smoke subset of the tests run from a directory that holds only the tests:
# codecs, the hand-framed protobuf layer, and the client's write, primary-key and scan paths against
# real server processes. The pins are read from pyproject.toml, so a bound that moves is what the
# oldest stage installs next time; wheels only (--only-binary), as a user on this Python would get.
#
# The wheel is the one .ci/wheel_smoke.sh built from these sources (kept in $FLUSS_FAST_CI_CACHE,
# default ~/.cache/fluss-fast-ci), else built here first (~1.5-3 min for the extensions).
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1
mode=${1:-}
case "$mode" in
    oldest|newest) ;;
    *) echo "usage: $0 oldest|newest" >&2; exit 2 ;;
esac
PY=${PYTHON:-python}
start=$SECONDS
step() { echo "--- deps $mode: $1 ($(( SECONDS - start ))s)"; }

work=$(mktemp -d -t fluss-fast-deps-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src" "$work/run"
git archive --format=tar HEAD | tar -x -C "$work/src"

# the same key as wheel_smoke.sh's: a change to the tests or CI scripts alone reuses the wheel
key=$(git ls-tree HEAD fluss_fast setup.py pyproject.toml MANIFEST.in README.md LICENSE | git hash-object --stdin)
cache="${FLUSS_FAST_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fluss-fast-ci}/$key"
tag=$("$PY" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
wheel=$(ls "$cache"/fluss_fast-*-"$tag"-*.whl 2>/dev/null | head -n 1 || true)
if [ -z "$wheel" ]; then
    step "no wheel of these sources in $cache: building one"
    "$PY" -m pip wheel -q --no-deps -w "$cache" "$work/src"
    wheel=$(ls "$cache"/fluss_fast-*-"$tag"-*.whl | head -n 1)
fi
step "wheel $(basename "$wheel")"

# The requirement lines: runtime dependencies and the server and pandas extras, as pinned for this
# mode; then the test runner's own packages (newest: they do not bound what users get).
"$PY" - "$mode" "$work/src/pyproject.toml" > "$work/requirements.txt" <<'EOF'
import re
import sys
import tomllib

mode, path = sys.argv[1], sys.argv[2]
with open(path, "rb") as f:
    project = tomllib.load(f)["project"]
extras = project["optional-dependencies"]
reqs = project["dependencies"] + extras["server"] + extras["pandas"]
for req in reqs:
    spec, _, marker = req.partition(";")
    m = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*(.*?)\s*", spec)
    name, bounds = m.group(1), m.group(2)
    if mode == "oldest":
        low = re.search(r">=\s*([0-9][0-9.]*)", bounds)
        if not low:
            sys.exit(f"{req}: no lower bound to pin")
        bounds = f"=={low.group(1)}"
    print(f"{name}{bounds}" + (f"; {marker.strip()}" if marker else ""))
runner = {"pytest", "pytest-asyncio", "pytest-timeout", "hypothesis"}
for req in extras["test"]:
    if re.match(r"[A-Za-z0-9_.\-]+", req).group(0) in runner:
        print(req)
EOF
echo "requirements ($mode):"; sed 's/^/  /' "$work/requirements.txt"

step "fresh venv"
"$PY" -m venv "$work/venv"
vpy="$work/venv/bin/python"
upgrade=()
[ "$mode" = newest ] && upgrade=(--upgrade --upgrade-strategy eager)
"$vpy" -m pip install -q --only-binary=:all: "${upgrade[@]}" "$wheel" -r "$work/requirements.txt"
"$vpy" -m pip list --format=freeze 2>/dev/null \
    | grep -iE '^(fluss.fast|protobuf|pyarrow|numpy|pandas|uvloop|zstandard|lz4|rocksdict)==' | sed 's/^/  /'

# only the tests and pytest's configuration next to them: `fluss_fast` can come from nowhere but the venv
cp -r "$work/src/tests" "$work/src/pyproject.toml" "$work/run/"
cd "$work/run"

step "import fluss_fast"
"$vpy" -c 'import sys, fluss_fast; assert "site-packages" in fluss_fast.__file__, fluss_fast.__file__; print("imported", fluss_fast.__file__)'
"$vpy" -m fluss_fast --version

step "smoke tests"
# test_twins_loaded's registry test lists the .pyx files of a source tree, which an installed wheel
# is not
"$vpy" -m pytest -q tests/codec tests/rpc tests/client/test_client_write.py tests/client/test_client_kv.py \
    tests/client/test_client_scan.py tests/client/test_scan_records.py \
    --deselect tests/codec/test_twins_loaded.py::test_registry_sees_every_pyx_in_the_tree
step "passed"
