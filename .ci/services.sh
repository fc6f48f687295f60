#!/usr/bin/env bash
# Starts the local Postgres and NATS (JetStream) the tests use, installing them from Debian packages if missing.
set -euo pipefail
apt_install() {
  if [ -z "${APT_UPDATED:-}" ]; then apt-get update -qq; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}
command -v tmux >/dev/null || apt_install tmux # the console's end-to-end test (cmd/zoea tui_e2e_test.go) drives zoea tui in tmux
if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  command -v pg_ctlcluster >/dev/null || apt_install postgresql
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi
pg_isready -h 127.0.0.1 -p 5432
if ! (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null; then
  [ -x /usr/sbin/nats-server ] || apt_install nats-server
  mkdir -p /var/lib/nats-server
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
    -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
  for _ in $(seq 1 30); do (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null && break; sleep 1; done
fi
(exec 3<>/dev/tcp/127.0.0.1/4222) && echo "nats: accepting connections"
