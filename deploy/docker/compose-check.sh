#!/usr/bin/env bash
# make compose-check: docker compose on a real engine, end to end, as a user runs it (docs/DEPLOY.md).
#   1. base images: present, pulled, or built as local stand-ins (deploy/docker/standins/build.sh) when no registry
#      answers;
#   2. build every image;  3. `up -d` until three myses have earned credits in the game;
#   4. the web console: its container healthy, and over its published port the login page, a wrong token refused,
#      the admin token's login and the swarm page listing the demo myses, as docs/DEPLOY.md tells a user to do;
#   5. the cli profile's `zoea list`;  6. kill -9 of the runner's process inside its container: it is restarted, play
#      goes on and the web console still shows the swarm;  7. `down` and `up` again: the same swarm continues and the
#      web console shows it;  8. `down -v`.
# Each phase prints its time. It runs as its own project (ZOEA_CHECK_PROJECT, default zoea-check) with no host ports
# but the simulator's admin on ZOEA_CHECK_SIM_PORT and the web console on ZOEA_CHECK_WEB_PORT
# (deploy/docker/compose-check.yml), so it can run beside `make dev`.
# Not part of `make test`: it needs a Docker engine and, the first time, several minutes of building.
set -euo pipefail
cd "$(dirname "$0")/../.."
PROJECT="${ZOEA_CHECK_PROJECT:-zoea-check}"
export ZOEA_CHECK_SIM_PORT="${ZOEA_CHECK_SIM_PORT:-17190}"
export ZOEA_CHECK_WEB_PORT="${ZOEA_CHECK_WEB_PORT:-17191}"
TOKEN="${ZOEA_ADMIN_TOKEN:-dev-admin-token-change-me}"
EARN_TIMEOUT="${ZOEA_CHECK_EARN_TIMEOUT:-300}"
MYSES="${ZOEA_DEMO_MYSES:-3}"
dc() { docker compose -p "$PROJECT" -f docker-compose.yml -f deploy/docker/compose-check.yml "$@"; }

LOG=$(mktemp -t zoea-compose-check.XXXXXX)
t0=$(date +%s); phase_start=$t0; phase=""
begin() { phase=$1; phase_start=$(date +%s); printf '== %s\n' "$phase"; }
done_phase() { printf '   %s: %ss\n' "$phase" "$(( $(date +%s) - phase_start ))"; }
fail() {
  printf 'compose-check: FAILED in "%s": %s\n' "$phase" "$*" >&2
  printf 'compose-check: build and up output: %s\n' "$LOG" >&2
  dc ps -a >&2 || true
  dc logs --no-color --tail 40 >&2 || true
  if [ -z "${ZOEA_CHECK_KEEP:-}" ]; then dc down -v --remove-orphans >/dev/null 2>&1 || true; fi
  rm -f "${JAR:-}"
  exit 1
}
trap 'fail "interrupted"' INT TERM

# stats prints "username credits_earned calls" per player from the simulator's admin endpoint.
stats() {
  curl -fsS --max-time 5 -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$ZOEA_CHECK_SIM_PORT/admin/stats" |
    jq -r '.players[] | "\(.username) \(.credits_earned) \(.calls)"'
}
earners() { stats 2>/dev/null | awk '$2 > 0' | wc -l; }
total_calls() { stats 2>/dev/null | awk '{s += $3} END {print s + 0}'; }
# wait_until SECONDS DESCRIPTION COMMAND...: polls COMMAND every 2 s.
wait_until() {
  local limit=$1 what=$2; shift 2
  local deadline=$(( $(date +%s) + limit ))
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "$what did not happen within ${limit}s"
    sleep 2
  done
}
enough_earners() { [ "$(earners)" -ge "$MYSES" ]; }
calls_beyond() { [ "$(total_calls)" -gt "$1" ]; }

# The web console (service web), reached as docs/DEPLOY.md says: http://127.0.0.1:<published port>/, log in with
# ZOEA_ADMIN_TOKEN. WEB is the base URL; JAR the cookie jar of one browser session.
WEB="http://127.0.0.1:$ZOEA_CHECK_WEB_PORT"
JAR=$(mktemp -t zoea-compose-check-cookies.XXXXXX)
web_health() { docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{end}}' "$(dc ps -q web)" 2>/dev/null; }
web_healthy() { [ "$(web_health)" = healthy ]; }
# web_get PATH: the page's body; fails on an HTTP error. Follows redirects (/ → /login without a session).
web_get() { curl -fsS --max-time 10 -L -b "$JAR" -c "$JAR" "$WEB$1"; }
# web_login TOKEN: GET /login for the form's CSRF token (and its cookie), then POST the token; prints the HTTP status
# and, after a blank line, the page the login ends on.
web_login() {
  local form csrf
  form=$(web_get /login) || return 1
  csrf=$(sed -n 's/.*name="csrf" value="\([^"]*\)".*/\1/p' <<<"$form" | head -n 1)
  [ -n "$csrf" ] || { echo "the login page has no CSRF field"; return 1; }
  curl -sS --max-time 10 -L -b "$JAR" -c "$JAR" -w '\n%{http_code}\n' \
    --data-urlencode "csrf=$csrf" --data-urlencode "token=$1" "$WEB/login"
}
# web_console: the checks of phase 4, which down/up repeats with a new session.
web_console() {
  local page status
  : >"$JAR"
  web_healthy || fail "the web container is not healthy (its health: $(web_health))"
  [ "$(curl -fsS --max-time 5 "$WEB/healthz")" = ok ] || fail "$WEB/healthz does not answer ok"
  page=$(web_get /) || fail "$WEB/ does not answer"
  grep -q 'name="token"' <<<"$page" || fail "$WEB/ without a session is not the login page"
  page=$(web_login "not-$TOKEN") || fail "the login with a wrong token failed: $page"
  status=$(tail -n 1 <<<"$page")
  [ "$status" = 401 ] || fail "a wrong admin token was not refused with 401 (status $status)"
  page=$(web_login "$TOKEN") || fail "the login with the admin token failed: $page"
  status=$(tail -n 1 <<<"$page")
  [ "$status" = 200 ] || fail "the login with the admin token ended with status $status, not the swarm page"
  for i in $(seq 1 "$MYSES"); do
    grep -q "href=\"/mysis/mysis-$i\"" <<<"$page" || fail "the web console's swarm page does not list mysis-$i"
  done
  page=$(web_get /mysis/mysis-1) || fail "$WEB/mysis/mysis-1 does not answer"
  printf '   web console %s: healthy, wrong token refused (401), logged in, the swarm page lists mysis-1…mysis-%s\n' "$WEB" "$MYSES"
}

begin "preflight"
command -v docker >/dev/null || fail "no docker CLI on PATH"
command -v jq >/dev/null || fail "jq is missing (sudo apt-get install jq)"
command -v curl >/dev/null || fail "curl is missing (sudo apt-get install curl)"
docker info >/dev/null 2>&1 || fail "the Docker engine does not answer: start it (sudo systemctl start docker, or dockerd &)"
docker compose version >/dev/null 2>&1 || fail "the compose v2 plugin is missing (docs/DEPLOY.md: 'Docker engine and compose versions')"
engine=$(docker version -f '{{.Server.Version}}'); compose=$(docker compose version --short)
printf '   engine %s, compose %s\n' "$engine" "$compose"
missing=()
for img in golang:1.26 gcr.io/distroless/static-debian12:nonroot postgres:16 nats:2-alpine; do
  docker image inspect "$img" >/dev/null 2>&1 || missing+=("$img")
done
if [ ${#missing[@]} -gt 0 ]; then
  printf '   base images not present: %s\n' "${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then bash deploy/docker/standins/build.sh "${missing[@]}"
  else sudo bash deploy/docker/standins/build.sh "${missing[@]}"; fi
fi
dc down -v --remove-orphans >/dev/null 2>&1 || true
done_phase

begin "build"
dc build >>"$LOG" 2>&1 || fail "docker compose build failed (its output: $LOG)"
done_phase

begin "up to $MYSES myses earning credits"
# pull_policy: build makes every `up` and `run` run the (cached) build too; its output goes to the log (`run`:
# --quiet-build). Without buildx, compose warns that it is "configured to build using Bake" and uses its own builder.
dc up -d >>"$LOG" 2>&1 || fail "docker compose up failed (its output: $LOG)"
wait_until "$EARN_TIMEOUT" "$MYSES myses earning credits" enough_earners
stats | sed 's/^/   /'
done_phase

begin "web console on 127.0.0.1:$ZOEA_CHECK_WEB_PORT"
wait_until 120 "the web container's health check" web_healthy
web_console
done_phase

begin "cli profile: zoea list"
dc --profile cli run --rm --quiet-build zoea list || fail "zoea list failed"
done_phase

begin "kill -9 of the runner's process; play goes on"
cid=$(dc ps -q runner); pid=$(docker inspect -f '{{.State.Pid}}' "$cid")
restarts=$(docker inspect -f '{{.RestartCount}}' "$cid")
before=$(total_calls)
kill -9 "$pid"
wait_until 120 "the runner's restart" bash -c "[ \"\$(docker inspect -f '{{.RestartCount}}' $cid)\" -gt $restarts ]"
wait_until 180 "play after the runner's restart" calls_beyond "$before"
printf '   game calls %s → %s\n' "$before" "$(total_calls)"
web_console
done_phase

begin "down, up: the swarm continues"
before=$(total_calls)
dc down >>"$LOG" 2>&1 || fail "docker compose down failed"
dc up -d >>"$LOG" 2>&1 || fail "the second docker compose up failed"
wait_until 180 "play after down/up" calls_beyond "$before"
[ "$(earners)" -ge "$MYSES" ] || fail "after down/up the game lost the myses' earnings: $(stats | tr '\n' ';')"
dc --profile cli run --rm --quiet-build zoea list || fail "zoea list failed after down/up"
wait_until 120 "the web container's health check after down/up" web_healthy
web_console
done_phase

begin "down -v"
dc down -v --remove-orphans >>"$LOG" 2>&1 || fail "docker compose down -v failed (its output: $LOG)"
done_phase
trap - INT TERM
rm -f "$JAR"
printf 'compose-check: passed in %ss (build and up output: %s)\n' "$(( $(date +%s) - t0 ))" "$LOG"
