#!/usr/bin/env bash
# Installs the pinned tools the Makefile needs. Versions live here and nowhere else; each is a module version the
# Go module proxy serves (.ci/check-pins.sh proves it). A tool is skipped only when the installed binary was built
# from the very module version this script would install (read from the binary's build info, so tools that print
# "dev build" for their own version are compared the same way).
set -euo pipefail
GOBIN=$(go env GOBIN)
[ -n "$GOBIN" ] || GOBIN=$(go env GOPATH)/bin

TOOLS=(
  github.com/bufbuild/buf/cmd/buf@v1.50.0
  google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.6
  google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
  honnef.co/go/tools/cmd/staticcheck@v0.6.1
  github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3
)

for spec in "${TOOLS[@]}"; do
  pkg=${spec%@*} version=${spec##*@} name=${pkg##*/}
  have=$( [ -x "$GOBIN/$name" ] && go version -m "$GOBIN/$name" 2>/dev/null | awk '$1 == "mod" { print $3; exit }' || true)
  [ "$have" = "$version" ] && continue
  echo "installing $spec${have:+ (found $have)}"
  GOFLAGS=-mod=mod go install "$spec"
done
