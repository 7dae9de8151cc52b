#!/bin/sh
# Regenerates onnx.pb.go from the official onnx.proto shipped by Debian's
# python3-onnx (1.12). The proto package is renamed to paretonav.onnx so that
# our types do not collide with onnx-go's "onnx" registrations at start-up.
# Needs protoc (Debian's protobuf-compiler) and
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.5
set -eu
src=${ONNX_PROTO:-/usr/lib/python3/dist-packages/onnx/onnx.proto}
cd "$(dirname "$0")"
sed -e 's/^package onnx;/package paretonav.onnx;/' "$src" > onnx.proto
protoc --go_out=. --go_opt=paths=source_relative \
  --go_opt=Monnx.proto=github.com/paretonav/paretonav/importer/onnxpb onnx.proto
