#!/usr/bin/env bash
# Regenerates the Swift code of Protos/*.proto into Sources/GRPCPipelines/Generated, with
# Debian's `protoc` (apt-get install protobuf-compiler) and the two protoc plugins built from the
# package copies this package resolved (.build/checkouts): protoc-gen-swift (swift-protobuf)
# and protoc-gen-grpc-swift-2 (grpc-swift-protobuf). The generated code is checked in, so
# neither building the package nor CI needs protoc or the plugins (building them takes ~10
# minutes on 2 cores).
#
#   bash Integrations/GRPC/Scripts/generate.sh
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v protoc >/dev/null; then
  apt-get update -qq && apt-get install -y -qq protobuf-compiler >/dev/null
fi
swift package resolve
scratch=.build/protoc-plugins
swift build --package-path .build/checkouts/swift-protobuf --scratch-path "$scratch/swift" \
  --product protoc-gen-swift
swift build --package-path .build/checkouts/grpc-swift-protobuf \
  --scratch-path "$scratch/grpc" --product protoc-gen-grpc-swift-2

out=Sources/GRPCPipelines/Generated
mkdir -p "$out"
protoc --proto_path=Protos \
  --plugin=protoc-gen-swift="$scratch/swift/debug/protoc-gen-swift" \
  --swift_out="$out" --swift_opt=Visibility=Public \
  --plugin=protoc-gen-grpc-swift="$scratch/grpc/debug/protoc-gen-grpc-swift-2" \
  --grpc-swift_out="$out" --grpc-swift_opt=Visibility=Public \
  Protos/*.proto
echo "generated: $(ls "$out")"
