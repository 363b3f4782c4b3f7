#!/usr/bin/env bash
# The documentation site: the benchmark tables must match their JSON, and `mkdocs build --strict` must
# pass (every warning is an error: a broken link between pages, a missing anchor, a docstring that does
# not parse). External links are not fetched: CI reaches the package registries only.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 NO_MKDOCS_2_WARNING=1

# The docs extra's packages as pyproject.toml lists them; not pip install -e '.[docs]', which would
# rebuild every Cython extension. mkdocstrings reads the package's sources, it does not import them.
reqs=$(mktemp)
trap 'rm -f "$reqs"' EXIT
python - > "$reqs" <<'PY'
import tomllib

with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["optional-dependencies"]["docs"]))
PY
python -m pip install -q -r "$reqs"

python docs/gen_bench_tables.py --check
python -m mkdocs build --strict --site-dir "${DOCS_SITE_DIR:-site}"
echo "docs: built into ${DOCS_SITE_DIR:-site}/"
