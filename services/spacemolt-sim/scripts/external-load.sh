#!/usr/bin/env bash
# Runs cmd/spacemolt-sim as its own process on a loopback port, drives it with
# tools/cmd/simload, and reports the server process's CPU per call, so server cost is
# measured apart from the load generator's.
#
#   scripts/external-load.sh -mode reads -client raw -players 32 -duration 20s
#   scripts/external-load.sh -mode players -client raw -players 1000 -duration 60s
#
# Environment: TICK (default 1s), PORT (default 17199). Rate limits are off.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'kill "${pid:-}" 2>/dev/null || true; rm -rf "$bin"' EXIT
go build -o "$bin/sim" ./cmd/spacemolt-sim
go build -o "$bin/simload" ./tools/cmd/simload
port=${PORT:-17199}
ZOEA_LISTEN_ADDR=127.0.0.1:$port ZOEA_SIM_TICK=${TICK:-1s} ZOEA_SIM_READS_PER_MIN=-1 \
  ZOEA_SIM_MUTATIONS_PER_MIN=-1 ZOEA_SIM_CHAT_PER_MIN=-1 "$bin/sim" 2>"$bin/sim.log" &
pid=$!
for _ in $(seq 50); do curl -sf "127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; } # utime+stime in clock ticks
hz=$(getconf CLK_TCK)
"$bin/simload" -url "http://127.0.0.1:$port/mcp" "$@" | tee "$bin/out"
# The CPU window includes connect/register; it is dominated by the load phase.
after=$(cpu)
calls=$(sed -n 's/^total *ok=\([0-9]*\) errors=\([0-9]*\).*/\1 \2/p' "$bin/out" | awk '{print $1+$2}')
echo "server   process CPU ${after} ticks of 1/${hz}s over the whole run; $(awk -v c="$after" -v h="$hz" -v n="$calls" 'BEGIN{printf "%.0f µs/call over %d load-phase calls (upper bound: includes connect/register)", c/h*1e6/n, n}')"
