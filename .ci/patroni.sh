#!/usr/bin/env bash
# The Postgres failover drill of issue 31, as CI runs it: installs Patroni and etcd (Debian packages) when they are
# missing, then runs `make chaos` in its -postgres patroni mode — a primary and two synchronous replicas under
# Patroni, the memory service on a multi-host URL, the primary's whole node kill -9ed twice under load — bounded by
# a timeout. Fails on any lost or duplicated acknowledged append, a failover that reads as anything but Unavailable
# to clients, a mysis left ERRORED or one that never plays again. Run as root (it installs packages; Patroni and
# Postgres then run as the postgres OS user).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "patroni.sh: run as root (sudo bash .ci/patroni.sh): it installs packages" >&2
  exit 1
fi
missing=()
command -v patroni >/dev/null || missing+=(patroni)
command -v etcd >/dev/null || missing+=(etcd-server)
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing ${missing[*]}"
  . "$(dirname "$0")/apt.sh"
  apt_get update -qq
  apt_get install -y -qq --no-install-recommends "${missing[@]}"
  # Where an init system started the package's own etcd, stop it: the drill runs its own on free ports.
  if command -v systemctl >/dev/null && systemctl is-active --quiet etcd 2>/dev/null; then
    systemctl disable --now etcd
  fi
fi
# Short model replies (2–4 s) so every mysis shows it plays again within the run; two failovers; 4–7 minutes on
# the shared 2-core box (1.5–3 of them building), the timeout is the bound.
timeout "${ZOEA_PATRONI_TIMEOUT:-15m}" make chaos CHAOS_FLAGS="-postgres patroni -swarm 12 -slow 1 -slow-min 2s -slow-max 4s -steady 8s"
