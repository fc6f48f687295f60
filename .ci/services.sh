#!/usr/bin/env bash
# Prepares a machine for `make dev` and `make test` (run as root: it installs Debian packages and acts as the postgres
# OS user). Idempotent; safe to run again. `make dev` and `make test` run it (through sudo) when --check finds
# something missing.
#   - installs what is missing: PostgreSQL, NATS, gcc (go test -race needs cgo), jq (the cookbook), tmux, chromium
#     (the web console's browser test), Node.js and npm (the simulator's TypeScript MCP SDK test);
#   - starts the local Postgres cluster and creates role zoea (password zoea, CREATEDB) owning database zoea, which
#     is what the default ZOEA_DATABASE_URL (postgres://zoea:zoea@127.0.0.1:5432/zoea) and the tests' admin URL use.
#     A password works with Debian's default pg_hba.conf (scram-sha-256 on 127.0.0.1); pg_hba.conf is left alone;
#   - makes sure a NATS with JetStream answers on 127.0.0.1:4222: starts one when nothing answers; when the Debian
#     package's own service answers with its stock config (host and port only, JetStream off), enables JetStream in
#     /etc/nats-server.conf and restarts it; any other NATS without JetStream is reported with what to do.
# --check installs and changes nothing (any user): it lists what is missing, one line each, and exits 1 if anything is.
# ZOEA_PG_PORT (default 5432) picks another local cluster, for example one made with pg_createcluster; ZOEA_NATS_PORT
# (default 4222) another NATS port.
set -euo pipefail
PG_PORT="${ZOEA_PG_PORT:-5432}"
NATS_PORT="${ZOEA_NATS_PORT:-4222}"
NATS_CONF=/etc/nats-server.conf

# nats_info prints the INFO line a NATS server sends on connect (nothing when nothing answers). JetStream-enabled
# servers say "jetstream":true in it, so it needs no NATS client.
nats_info() {
  (exec 3<>"/dev/tcp/127.0.0.1/$NATS_PORT" && IFS= read -r -t 3 line <&3 && printf '%s' "$line") 2>/dev/null || true
}
nats_state() { # none | plain | jetstream
  local info
  info=$(nats_info)
  if [ -z "$info" ]; then echo none
  elif [[ $info == *'"jetstream":true'* ]]; then echo jetstream
  else echo plain
  fi
}
no_jetstream_advice="something answers on 127.0.0.1:$NATS_PORT but has no JetStream, which Zoea needs: enable it (add
  'jetstream { store_dir: /var/lib/nats-server }' to $NATS_CONF, or the config that server reads, and restart it:
  sudo systemctl restart nats-server), or stop it (sudo systemctl disable --now nats-server) so that this script
  starts a JetStream server of its own"

# node_recent: the installed Node.js is 18 or later, which @modelcontextprotocol/sdk needs (Debian 12 and Ubuntu 24.04
# ship 18).
node_recent() { node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)' 2>/dev/null; }
node_old_advice() { echo "Node.js $(node --version 2>/dev/null) is older than 18, which the TypeScript MCP SDK test needs: install Node.js 18 or later"; }

# check lists what `make dev` and `make test` need and this machine lacks.
check() {
  local missing=()
  command -v gcc >/dev/null || missing+=("gcc is not installed (go test -race needs cgo)")
  command -v jq >/dev/null || missing+=("jq is not installed (the cookbook's examples)")
  command -v tmux >/dev/null || missing+=("tmux is not installed (the console's end-to-end test runs in it)")
  command -v chromium >/dev/null || missing+=("chromium is not installed (the web console's browser test drives it headless)")
  [ -x /usr/sbin/nats-server ] || missing+=("nats-server is not installed (tests start their own servers with it)")
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    missing+=("Node.js and npm are not installed (the simulator's TypeScript MCP SDK test runs them)")
  elif ! node_recent; then
    missing+=("$(node_old_advice)")
  fi
  if ! command -v pg_isready >/dev/null || ! command -v psql >/dev/null; then
    missing+=("PostgreSQL is not installed")
  elif ! pg_isready -q -h 127.0.0.1 -p "$PG_PORT" 2>/dev/null; then
    missing+=("PostgreSQL does not answer on 127.0.0.1:$PG_PORT")
  elif ! PGPASSWORD=zoea PGCONNECT_TIMEOUT=5 psql -X -q -h 127.0.0.1 -p "$PG_PORT" -U zoea -d zoea -tAc 'SELECT 1' >/dev/null 2>&1; then
    missing+=("role zoea (password zoea) cannot log in to database zoea on 127.0.0.1:$PG_PORT")
  fi
  case $(nats_state) in
    none) missing+=("no NATS answers on 127.0.0.1:$NATS_PORT") ;;
    plain) missing+=("$no_jetstream_advice") ;;
  esac
  if [ ${#missing[@]} -gt 0 ]; then
    printf '  - %s\n' "${missing[@]}"
    return 1
  fi
}

if [ "${1:-}" = --check ]; then
  check
  exit
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "services.sh: run as root (sudo bash .ci/services.sh): it installs packages and creates the Postgres role" >&2
  exit 1
fi
. "$(dirname "$0")/apt.sh"
apt_install() {
  if [ -z "${APT_UPDATED:-}" ]; then apt_get update -qq; APT_UPDATED=1; fi
  apt_get install -y -qq "$@"
}
missing=()
command -v gcc >/dev/null || missing+=(gcc)
command -v jq >/dev/null || missing+=(jq)
command -v pg_ctlcluster >/dev/null || missing+=(postgresql)
[ -x /usr/sbin/nats-server ] || missing+=(nats-server)
command -v tmux >/dev/null || missing+=(tmux) # the console's end-to-end test drives zoea tui in tmux
command -v chromium >/dev/null || missing+=(chromium) # the web console's browser test drives zoea web in it (chromedp)
# The simulator's TypeScript MCP SDK test runs `npm ci` and node (.ci/node.sh, which CI runs, installs the same).
{ command -v node >/dev/null && command -v npm >/dev/null; } || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  apt_install "${missing[@]}"
fi
if ! node_recent; then
  echo "services.sh: $(node_old_advice)" >&2
  exit 1
fi

# Postgres: the cluster listening on PG_PORT (started if it is down).
if ! pg_isready -q -h 127.0.0.1 -p "$PG_PORT" 2>/dev/null; then
  cluster=$(pg_lsclusters -h | awk -v p="$PG_PORT" '$3 == p {print $1 " " $2; exit}')
  if [ -z "$cluster" ]; then
    echo "services.sh: no Postgres cluster is configured on port $PG_PORT (pg_lsclusters lists them)" >&2
    exit 1
  fi
  # shellcheck disable=SC2086 # "version name"
  pg_ctlcluster --skip-systemctl-redirect $cluster start
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p "$PG_PORT" && break; sleep 1; done
fi
pg_isready -h 127.0.0.1 -p "$PG_PORT"

psql_admin() { runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -p "$PG_PORT" "$@"; }
psql_admin -d postgres <<'SQL'
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'zoea') THEN
    CREATE ROLE zoea LOGIN CREATEDB PASSWORD 'zoea';
  ELSE
    ALTER ROLE zoea LOGIN CREATEDB PASSWORD 'zoea';
  END IF;
END $$;
SQL
if [ "$(psql_admin -d postgres -tA -c "SELECT 1 FROM pg_database WHERE datname = 'zoea'")" != 1 ]; then
  psql_admin -d postgres -c "CREATE DATABASE zoea OWNER zoea"
else
  # A database left by an older setup (owned by postgres): hand it and its objects to zoea so migrations can run.
  psql_admin -d postgres -c "ALTER DATABASE zoea OWNER TO zoea"
  psql_admin -d zoea <<'SQL'
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT format('ALTER TABLE %I.%I OWNER TO zoea', schemaname, tablename) AS s
           FROM pg_tables WHERE schemaname = 'public' AND tableowner <> 'zoea' LOOP
    EXECUTE r.s;
  END LOOP;
END $$;
SQL
fi
PGPASSWORD=zoea psql -X -q -h 127.0.0.1 -p "$PG_PORT" -U zoea -d zoea -tAc "SELECT 'postgres: role zoea can connect to database zoea at 127.0.0.1:$PG_PORT'"

# NATS with JetStream: the port answering is not enough.
wait_nats() { for _ in $(seq 1 30); do [ "$(nats_state)" = "$1" ] && return; sleep 1; done; }
state=$(nats_state)
if [ "$state" = plain ] && [ "$NATS_PORT" = 4222 ] && command -v systemctl >/dev/null &&
  systemctl is-active -q nats-server 2>/dev/null && ! grep -qiE '^[[:space:]]*jetstream' "$NATS_CONF" &&
  ! dpkg --verify nats-server 2>/dev/null | grep -q "$NATS_CONF"; then
  # The package's service with its unmodified stock config: nobody chose "no JetStream", so turn it on.
  echo "nats: the nats-server service runs with Debian's stock $NATS_CONF, which leaves JetStream off; enabling it there"
  install -d -o nats -g nats /var/lib/nats-server
  printf '\n# Added by Zoea'"'"'s .ci/services.sh: Zoea needs JetStream.\njetstream {\n  store_dir: /var/lib/nats-server\n}\n' >>"$NATS_CONF"
  systemctl restart nats-server
  wait_nats jetstream
  state=$(nats_state)
fi
case $state in
  none)
    mkdir -p /var/lib/nats-server
    # Matched by its own pid file: --exec alone would take any nats-server on the machine (another port, another
    # container's, one in a chroot) for this one and start nothing.
    start-stop-daemon --start --oknodo --background --make-pidfile --pidfile /run/zoea-nats-server.pid \
      --exec /usr/sbin/nats-server -- \
      -a 127.0.0.1 -p "$NATS_PORT" -js -sd /var/lib/nats-server -l /var/log/nats-server.log
    wait_nats jetstream
    ;;
  plain)
    echo "services.sh: $no_jetstream_advice" >&2
    exit 1
    ;;
esac
if [ "$(nats_state)" != jetstream ]; then
  echo "services.sh: NATS with JetStream did not come up on 127.0.0.1:$NATS_PORT (log: /var/log/nats-server.log)" >&2
  exit 1
fi
echo "nats: JetStream answers at 127.0.0.1:$NATS_PORT"
