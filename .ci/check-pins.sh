#!/usr/bin/env bash
# Cheap guard: every tool version pinned in .ci/tools.sh must resolve from the Go module proxy, so a version the proxy
# refuses fails here with its name instead of hiding behind a binary that happens to be installed already.
set -euo pipefail
cd "$(dirname "$0")"
fail=0
for spec in $(grep -oE '^[[:space:]]+[a-z0-9.-]+\.[a-z]+/[^ ]+@v[^ ]+' tools.sh); do
  pkg=${spec%@*} version=${spec##*@} mod=$pkg ok=
  while [ -n "$mod" ]; do # the module is some prefix of the package path
    if (cd "${TMPDIR:-/tmp}" && GOWORK=off GOFLAGS=-mod=mod go list -m "$mod@$version" >/dev/null 2>&1); then ok=1; break; fi
    case "$mod" in */*) mod=${mod%/*} ;; *) break ;; esac
  done
  if [ -n "$ok" ]; then echo "pin ok: $mod@$version"; else echo "pin NOT served by the module proxy: $spec"; fail=1; fi
done
exit $fail
