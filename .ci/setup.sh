#!/usr/bin/env bash
# The one-time set-up `make dev` and `make test` run first: when .ci/services.sh --check finds something missing
# (PostgreSQL, the zoea role, a NATS with JetStream, gcc, tmux, jq, chromium, Node.js and npm: everything the tests
# need, so that `make test` runs every test), it says what and why, then runs .ci/services.sh as root: directly when
# it already is root (CI), otherwise through sudo, which asks for the password once. On a machine that has everything
# it prints nothing and asks nothing.
# ZOEA_SKIP_SETUP=1 skips it (a machine set up another way: ZOEA_DATABASE_URL and ZOEA_NATS_URL point elsewhere).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -z "${ZOEA_SKIP_SETUP:-}" ] || exit 0
if why=$(bash .ci/services.sh --check); then
  exit 0
fi
echo "== set-up: this machine lacks what 'make dev' and 'make test' need:"
echo "$why"
if [ "$(id -u)" -eq 0 ]; then
  echo "== running .ci/services.sh (installs packages, starts PostgreSQL and NATS, creates role and database zoea)"
  exec bash .ci/services.sh
fi
if ! command -v sudo >/dev/null; then
  echo "set-up needs root, and sudo is not installed: run 'su -c \"bash .ci/services.sh\"' once, then this again" >&2
  exit 1
fi
echo "== running 'sudo bash .ci/services.sh' once (installs packages, starts PostgreSQL and NATS, creates role and"
echo "   database zoea); sudo may ask for your password. ZOEA_SKIP_SETUP=1 skips this step."
exec sudo bash .ci/services.sh
