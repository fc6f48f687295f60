#!/usr/bin/env bash
# Installs the pinned tools the Makefile needs. Versions live here and nowhere else.
set -euo pipefail
GOBIN=$(go env GOPATH)/bin
want() { # name version-substring
  [ -x "$GOBIN/$1" ] && "$GOBIN/$1" --version 2>&1 | grep -q -- "$2"
}
want buf 1.50.0 || go install github.com/bufbuild/buf/cmd/buf@v1.50.0
want protoc-gen-go v1.36.6 || go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.6
want protoc-gen-go-grpc 1.5.1 || go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
[ -x "$GOBIN/staticcheck" ] && "$GOBIN/staticcheck" -version | grep -q 2025.1.1 || go install honnef.co/go/tools/cmd/staticcheck@2025.1.1
[ -x "$GOBIN/grpcurl" ] || go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3
