#!/usr/bin/env bash
# Prepares a machine for `make dev` and `make test` (run as root: it installs Debian packages and acts as the postgres
# OS user). Idempotent; safe to run again.
#   - installs what is missing: PostgreSQL, NATS, gcc (go test -race needs cgo), jq (the cookbook);
#   - starts the local Postgres cluster and creates role zoea (password zoea, CREATEDB) owning database zoea, which
#     is what the default ZOEA_DATABASE_URL (postgres://zoea:zoea@127.0.0.1:5432/zoea) and the tests' admin URL use.
#     A password works with Debian's default pg_hba.conf (scram-sha-256 on 127.0.0.1); pg_hba.conf is left alone;
#   - starts NATS with JetStream on 127.0.0.1:4222.
# ZOEA_PG_PORT (default 5432) picks another local cluster, for example one made with pg_createcluster.
set -euo pipefail
PG_PORT="${ZOEA_PG_PORT:-5432}"

if [ "$(id -u)" -ne 0 ]; then
  echo "services.sh: run as root (sudo bash .ci/services.sh): it installs packages and creates the Postgres role" >&2
  exit 1
fi
apt_install() {
  if [ -z "${APT_UPDATED:-}" ]; then apt-get update -qq; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}
missing=()
command -v gcc >/dev/null || missing+=(gcc)
command -v jq >/dev/null || missing+=(jq)
command -v pg_ctlcluster >/dev/null || missing+=(postgresql)
[ -x /usr/sbin/nats-server ] || missing+=(nats-server)
command -v tmux >/dev/null || missing+=(tmux) # the console's end-to-end test drives zoea tui in tmux
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  apt_install "${missing[@]}"
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

# NATS with JetStream.
if ! (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null; then
  mkdir -p /var/lib/nats-server
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
    -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
  for _ in $(seq 1 30); do (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null && break; sleep 1; done
fi
(exec 3<>/dev/tcp/127.0.0.1/4222) && echo "nats: accepting connections at 127.0.0.1:4222"
