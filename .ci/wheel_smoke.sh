#!/usr/bin/env bash
# The release artefacts, built and tried as a user gets them: `python -m build` makes the sdist and
# then the wheel *from that sdist* (so the sdist must be able to compile the extensions from its .pyx
# files), twine checks both, and the wheel is installed with the server extra into a fresh venv where
# smoke tests run from an empty directory, against the installed copy and never the checkout.
#
# The build starts from `git archive HEAD`, not the working tree: what a fresh clone holds is what
# ships, and stray .so/.c files or uncommitted edits must not make a broken commit look good.
#
#   .ci/wheel_smoke.sh        # PYTHON=python3.x to build and test with another interpreter
#
# The wheel that passes is kept in $FLUSS_FAST_CI_CACHE (default ~/.cache/fluss-fast-ci), under this
# hash of what it was built from, where .ci/deps_matrix.sh takes it instead of compiling the extensions again.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1
PY=${PYTHON:-python}
start=$SECONDS
step() { echo "--- wheel smoke: $1 ($(( SECONDS - start ))s)"; }
fail() { echo "wheel smoke: FAILED: $1" >&2; exit 1; }

work=$(mktemp -d -t fluss-fast-wheel-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src" "$work/dist" "$work/run"

# what the wheel is built from, hashed: the key under which the wheel is kept for deps_matrix.sh
key=$(git ls-tree HEAD fluss_fast setup.py pyproject.toml MANIFEST.in README.md LICENSE | git hash-object --stdin)
step "export HEAD ($(git rev-parse --short HEAD))"
git archive --format=tar HEAD | tar -x -C "$work/src"

# build and twine in a venv of their own: twine's docutils must not replace what the caller's
# environment pins
step "build tools"
"$PY" -m venv "$work/tools"
"$work/tools/bin/python" -m pip install -q "build>=1.0" "twine>=5"

step "python -m build (sdist, then the wheel from the sdist)"
"$work/tools/bin/python" -m build --outdir "$work/dist" "$work/src" > "$work/build.log" 2>&1 \
    || { tail -n 40 "$work/build.log"; fail "python -m build"; }
grep -E "fluss_fast build: (WARNING|ERROR)" "$work/build.log" && fail "the build could not compile every extension"
sdist=$(ls "$work"/dist/*.tar.gz)
wheel=$(ls "$work"/dist/*.whl)
echo "$(basename "$sdist") $(du -k "$sdist" | cut -f1) KiB, $(basename "$wheel") $(du -k "$wheel" | cut -f1) KiB"

step "twine check --strict"
"$work/tools/bin/python" -m twine check --strict "$sdist" "$wheel"

step "contents of the sdist and the wheel"
# every Cython source, header and stub in the tree, setup.py and the license ship; generated C does not
"$work/tools/bin/python" - "$work/src" "$sdist" "$wheel" <<'EOF'
import sys
import tarfile
import zipfile
from pathlib import Path

src, sdist, wheel = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
with tarfile.open(sdist) as tar:
    in_sdist = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
with zipfile.ZipFile(wheel) as whl:
    in_wheel = set(whl.namelist())
problems = []
sources = sorted(str(p.relative_to(src)) for ext in ("pyx", "pxd", "h", "pyi")
                 for p in (src / "fluss_fast").rglob(f"*.{ext}"))
pyx = [s for s in sources if s.endswith(".pyx")]
for name in ["setup.py", "pyproject.toml", "LICENSE", "CHANGELOG.md", "fluss_fast/py.typed",
             "fluss_fast/rpc/fluss_api.proto", *sources]:
    if name not in in_sdist:
        problems.append(f"sdist lacks {name}")
for name in ["fluss_fast/py.typed", "fluss_fast/rpc/fluss_api_pb2.py", *sources]:
    if name not in in_wheel:
        problems.append(f"wheel lacks {name}")
for s in pyx:
    stem = s[:-len(".pyx")]
    if not any(n.startswith(stem + ".") and n.endswith(".so") for n in in_wheel):
        problems.append(f"wheel lacks the compiled {stem}")
if not any(n.endswith(".dist-info/licenses/LICENSE") for n in in_wheel):
    problems.append("wheel lacks its license file")
for where, names in (("sdist", in_sdist), ("wheel", in_wheel)):
    if any(n.endswith(".c") for n in names):
        problems.append(f"{where} carries generated C: {sorted(n for n in names if n.endswith('.c'))[:3]}")
if problems:
    sys.exit("\n".join(problems))
print(f"{len(pyx)} extensions compiled, {len(sources) - len(pyx)} .pxd/.h/.pyi files, py.typed, LICENSE")
EOF

step "fresh venv: the wheel with the server extra"
"$PY" -m venv "$work/venv"
vpy="$work/venv/bin/python"
"$vpy" -m pip install -q "$wheel[server]"

cd "$work/run"  # an empty directory: nothing importable but the installed package
export FLUSS_FAST_BENCH_CACHE="$work/cache"

step "the installed package, all extensions loaded"
n_ext=$(find "$work/src/fluss_fast" -name '_*.pyx' | wc -l)
"$vpy" - "$work/venv" <<'EOF'
import sys
import fluss_fast

where = fluss_fast.__file__
if not where.startswith(sys.argv[1]):
    sys.exit(f"fluss_fast imported from {where}, not from the venv")
print(f"fluss_fast {fluss_fast.__version__} from {where}")
EOF
version=$("$vpy" -m fluss_fast --version)
echo "$version"
grep -qx "compiled extensions: all $n_ext loaded" <<<"$version" || fail "not all $n_ext extensions loaded"

step "fluss-fast demo --rows 20000 (a log table and a primary-key table, round trip checked)"
"$work/venv/bin/fluss-fast" demo --rows 20000 --no-progress

step "without the server extra: the client imports, the server names the extra"
"$vpy" -m pip uninstall -q -y rocksdict
"$vpy" -c "import sys, fluss_fast, fluss_fast.sync; assert sys.modules.get('rocksdict') is None"
rc=0
err=$("$vpy" -m fluss_fast server --data-dir "$work/data" --listen 127.0.0.1:0 2>&1 >/dev/null) || rc=$?
echo "$err"
[ "$rc" -eq 1 ] && grep -q "pip install 'fluss-fast\[server\]'" <<<"$err" && [ "$(wc -l <<<"$err")" -eq 1 ] \
    || fail "a server without rocksdict should stop with one line naming the server extra (exit $rc)"

cache="${FLUSS_FAST_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fluss-fast-ci}/$key"
mkdir -p "$cache" && cp "$wheel" "$cache"/
step "passed"
