#!/bin/bash
# Entrypoint of the local postgres:16 stand-in (deploy/docker/standins/build.sh): what Zoea uses of the official
# image's entrypoint. On an empty data directory it initialises a cluster whose superuser is POSTGRES_USER with
# POSTGRES_PASSWORD, creates POSTGRES_DB, and accepts password logins from other containers; then it runs the server.
set -euo pipefail
: "${PGDATA:=/var/lib/postgresql/data}"
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec runuser -u postgres -- "$0" "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "postgres stand-in: POSTGRES_PASSWORD is not set (the official image refuses too)" >&2
    exit 1
  fi
  pwfile=$(mktemp); printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb -D "$PGDATA" --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  if [ "$POSTGRES_DB" != postgres ]; then
    echo "CREATE DATABASE \"$POSTGRES_DB\"" | postgres --single -D "$PGDATA" -j postgres >/dev/null
  fi
  echo "postgres stand-in: initialised $PGDATA (user $POSTGRES_USER, database $POSTGRES_DB)"
fi
if [ "${1:-postgres}" = postgres ]; then shift || true; exec postgres -D "$PGDATA" "$@"; fi
exec "$@"
