#!/usr/bin/env bash
# pypaimon (the `lake` extra) beside the pyarrow, pandas and polars already installed. pypaimon 2.1 caps
# them (pyarrow < 20, pandas < 3, polars < 2) although it works with the current ones; installing it
# the usual way would downgrade all three for every later stage. So: pypaimon without its dependencies,
# then those of its dependencies that are not the three capped ones, with their own version ranges.
set -euo pipefail
cd "$(dirname "$0")/.."
spec=$(python - <<'PY'
import tomllib

with open("pyproject.toml", "rb") as f:
    print(tomllib.load(f)["project"]["optional-dependencies"]["lake"][0])
PY
)
python -m pip install -q --no-deps "$spec"
reqs=$(mktemp)
trap 'rm -f "$reqs"' EXIT
python - > "$reqs" <<'PY'
from importlib.metadata import requires

try:
    from packaging.requirements import Requirement
except ImportError:  # pip vendors it when the environment does not have it
    from pip._vendor.packaging.requirements import Requirement

CAPPED = {"pyarrow", "pandas", "polars"}
for text in requires("pypaimon") or []:
    req = Requirement(text)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    if req.name.lower() not in CAPPED:
        req.marker = None
        print(req)
PY
python -m pip install -q -r "$reqs"
python -c "import pypaimon, pyarrow; print('pypaimon', pypaimon.__version__ if hasattr(pypaimon, '__version__') else '', 'with pyarrow', pyarrow.__version__)"
