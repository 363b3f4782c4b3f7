#!/bin/sh
# Regenerate fluss_api_pb2.py from fluss_api.proto (needs grpcio-tools).
cd "$(dirname "$0")" && python -m grpc_tools.protoc -I. --python_out=. fluss_api.proto
