#!/usr/bin/env bash
# Cheap guard: every tool version pinned in .ci/tools.sh, and the nats-server the tests run (natstest.Version in
# libs/testsupport/natstest/binary.go, which the tests build with go install), must resolve from the Go module proxy, so a
# version the proxy refuses fails here with its name instead of hiding behind a binary that happens to be installed
# already.
set -euo pipefail
cd "$(dirname "$0")"
fail=0
nats_pin=$(sed -n 's/^const Version = "\(v[^"]*\)"$/\1/p' ../libs/testsupport/natstest/binary.go)
if [ -z "$nats_pin" ]; then echo 'libs/testsupport/natstest/binary.go: no line const Version = "v...": the nats-server pin moved'; fail=1; fi
for spec in $(grep -oE '^[[:space:]]+[a-z0-9.-]+\.[a-z]+/[^ ]+@v[^ ]+' tools.sh) ${nats_pin:+github.com/nats-io/nats-server/v2@$nats_pin}; do
  pkg=${spec%@*} version=${spec##*@} mod=$pkg ok=
  while [ -n "$mod" ]; do # the module is some prefix of the package path
    if (cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod go list -m "$mod@$version" >/dev/null 2>&1); then ok=1; break; fi
    case "$mod" in */*) mod=${mod%/*} ;; *) break ;; esac
  done
  if [ -n "$ok" ]; then echo "pin ok: $mod@$version"; else echo "pin NOT served by the module proxy: $spec"; fail=1; fi
done
exit $fail
