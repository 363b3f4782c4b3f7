#!/bin/sh
# The one way to regenerate fluss_api_pb2.py and its type stub fluss_api_pb2.pyi from fluss_api.proto.
#
# grpcio-tools is pinned because the protoc inside it decides which protobuf runtimes can import the
# result: generated code needs a runtime at least as new as its protoc. 1.65.5 carries protoc 26.1,
# i.e. gencode 5.26.1, the floor that pyproject.toml declares (protobuf>=5.26.1). Gencode of that age
# also carries no runtime version check, so protobuf 6.x and 7.x import it without a warning; the
# deps_matrix CI stages import it on the oldest and the newest allowed protobuf. Moving the pin means
# moving that floor too (tests/packaging/test_protobuf_gencode.py fails until both agree).
#
# The tools live in a throw-away venv: they pull in their own protobuf, which must not replace the
# one fluss_fast runs on. Set PYTHON to choose the interpreter (grpcio-tools 1.65.5 has wheels for
# CPython 3.8-3.12).
set -eu
GRPCIO_TOOLS_VERSION=1.65.5
here=$(cd "$(dirname "$0")" && pwd)
tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT INT TERM
"${PYTHON:-python3}" -m venv "$tools"
"$tools/bin/python" -m pip install -q --disable-pip-version-check --only-binary=:all: \
    "grpcio-tools==$GRPCIO_TOOLS_VERSION"
cd "$here"
"$tools/bin/python" -m grpc_tools.protoc -I. --python_out=. --pyi_out=. fluss_api.proto
head -n 5 fluss_api_pb2.py | grep 'Protobuf Python Version'
