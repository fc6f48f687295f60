#!/usr/bin/env bash
# make compose-check: docker compose on a real engine, end to end, as a user runs it (docs/DEPLOY.md).
#   1. base images: present, pulled, or built as local stand-ins (deploy/docker/standins/build.sh) when no registry
#      answers;
#   2. build every image;  3. `up -d` until three myses have earned credits in the game;
#   4. the web console: its container healthy, and over its published port the login page, a wrong token refused,
#      the admin token's login and the swarm page listing the demo myses, as docs/DEPLOY.md tells a user to do;
#   5. the cli profile's `zoea list`, quiet (no build output: the image was built by `up`), and the seed job shown by
#      `ps -a`;  6. `docker kill --signal KILL` of the memory and runner containers, memory kept down until the
#      services that depend on it have passed more health probes than compose's `retries` (they probe liveness, so
#      they stay healthy), then `docker compose up -d` brings both back and play resumes (the myses' turns and game
#      calls rising, both first read after `up`); the web console still shows the swarm;  7. `down` and `up` again:
#      the same swarm continues (its earnings kept, turns and game calls rising, read after the second `up`) and
#      the web console shows it;  8. `down -v`.
# It needs no root and works with any engine the docker CLI reaches (docker kill, not a host-side kill of a pid).
# Whatever happens, an EXIT trap tears the project down (`down -v`), unless ZOEA_CHECK_KEEP is set and it failed.
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
  exit 1
}
# The EXIT trap runs on every way out (a failed phase, a command failing under set -e, an interrupt): the project
# is torn down unless the check passed (the last phase did it) or ZOEA_CHECK_KEEP asks to keep it for a look.
passed=""
cleanup() {
  local rc=$?
  if [ -z "$passed" ]; then
    if [ -z "${ZOEA_CHECK_KEEP:-}" ]; then
      dc down -v --remove-orphans >/dev/null 2>&1 || true
    else
      printf 'compose-check: ZOEA_CHECK_KEEP is set: project %s left up (docker compose -p %s down -v)\n' "$PROJECT" "$PROJECT" >&2
    fi
  fi
  rm -f "${JAR:-}" "${PROBES:-}"
  exit "$rc"
}
trap cleanup EXIT
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
total_credits() { stats 2>/dev/null | awk '{s += $2} END {print s + 0}'; }
enough_earners() { [ "$(earners)" -ge "$MYSES" ]; }
calls_beyond() { [ "$(total_calls)" -gt "$1" ]; }
# total_turns: the myses' turns summed, from the documented CLI path (`zoea list`, the runner's own count); nothing
# when the runner does not answer.
total_turns() {
  dc --profile cli run --rm zoea list 2>/dev/null |
    awk 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == "TURNS") c = i; next} c {gsub(",", "", $c); s += $c} END {if (c) print s + 0}'
}
turns_known() { [ -n "$(total_turns)" ]; }
# played_beyond TURNS CALLS: more turns and more game calls than given.
played_beyond() {
  local t
  t=$(total_turns)
  [ -n "$t" ] && [ "$t" -gt "$1" ] && [ "$(total_calls)" -gt "$2" ]
}
# play_resumes WHAT: the myses' turns and game calls, first read once the runner answers after an `up` returned
# (so nothing done before or during the restart counts), and a wait until both rise: only play after that `up` can.
play_resumes() {
  local turns calls
  wait_until 120 "the runner answering zoea list after $1" turns_known
  turns=$(total_turns); calls=$(total_calls)
  wait_until 180 "play after $1 (turns above $turns and game calls above $calls, counted after it)" played_beyond "$turns" "$calls"
  printf '   after %s: turns %s → %s, game calls %s → %s (counted after up), credits earned %s\n' \
    "$1" "$turns" "$(total_turns)" "$calls" "$(total_calls)" "$(total_credits)"
}
# health_probes SERVICE SINCE: appends the container's health probe results started after SINCE (RFC 3339, as
# Docker writes them) to $PROBES as "service start exit-code" lines; Docker keeps only the last five, so it is polled.
PROBES=$(mktemp -t zoea-compose-check-probes.XXXXXX)
health_probes() {
  docker inspect -f '{{range .State.Health.Log}}{{.Start.Format "2006-01-02T15:04:05.000000000Z07:00"}} {{.ExitCode}}{{"\n"}}{{end}}' "$(dc ps -q "$1")" 2>/dev/null |
    awk -v s="$1" -v since="$2" 'NF == 2 && $1 > since {print s, $1, $2}' >>"$PROBES"
  sort -u -o "$PROBES" "$PROBES"
}
# probed_past_retries SINCE SERVICE...: true once every SERVICE has passed more health probes since SINCE than
# compose's `retries` (15): a health check that included the stopped dependency would have turned it unhealthy.
probed_past_retries() {
  local since=$1 s n bad; shift
  for s in "$@"; do health_probes "$s" "$since"; done
  bad=$(awk '$3 != 0' "$PROBES" | head -n 1)
  [ -z "$bad" ] || fail "a health probe failed while memory was down ($bad): that health check depends on memory"
  for s in "$@"; do
    n=$(awk -v s="$s" '$1 == s' "$PROBES" | wc -l)
    [ "$n" -gt 15 ] || return 1
  done
}

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
# pull_policy: build makes every `up` run the (cached) build of each image's one building service too; its output
# goes to the log. Without buildx, compose warns that it is "configured to build using Bake" and uses its own
# BuildKit client against the engine's builder.
dc up -d >>"$LOG" 2>&1 || fail "docker compose up failed (its output: $LOG)"
wait_until "$EARN_TIMEOUT" "$MYSES myses earning credits" enough_earners
stats | sed 's/^/   /'
done_phase

begin "web console on 127.0.0.1:$ZOEA_CHECK_WEB_PORT"
wait_until 120 "the web container's health check" web_healthy
web_console
done_phase

# cli_list: the documented CLI path, `docker compose --profile cli run --rm zoea list`, exactly as docs/DEPLOY.md
# gives it (no --quiet-build): it must print the swarm and nothing of a build.
cli_list() {
  local out
  out=$(dc --profile cli run --rm zoea list 2>&1) || fail "zoea list failed: $out"
  printf '%s\n' "$out" | sed 's/^/   /'
  if grep -Eq '^#[0-9]+ |Building|Built|naming to' <<<"$out"; then fail "\`--profile cli run\` printed build output"; fi
  grep -q mysis-1 <<<"$out" || fail "zoea list does not list mysis-1"
}

begin "cli profile: zoea list"
cli_list
# The seed job has exited: `ps` lists running containers only, `ps -a` shows it (docs/DEPLOY.md).
seed_state=$(dc ps -a --format '{{.Service}} {{.State}} {{.ExitCode}}' seed)
[ "$seed_state" = "seed exited 0" ] || fail "docker compose ps -a shows the seed job as \"$seed_state\", want \"seed exited 0\""
[ -z "$(dc ps --format '{{.Service}}' seed)" ] || fail "docker compose ps (without -a) lists the exited seed job"
printf '   docker compose ps -a: %s\n' "$seed_state"
done_phase

begin "docker kill of memory and the runner; up -d brings them back; play resumes"
since=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
# docker kill is a manual stop: Docker does not restart the container (the restart policy is for crashes).
docker kill --signal KILL "$(dc ps -q memory)" "$(dc ps -q runner)" >/dev/null || fail "docker kill failed"
# Memory stays down while composer, bus and web pass more health probes than `retries`: with a health check that
# asked readiness (which includes memory) composer and bus would now be unhealthy, and `up -d` would refuse to start
# what waits on them ("dependency failed to start: container … is unhealthy").
wait_until 120 "16 health probes of composer, bus and web with memory down" probed_past_retries "$since" composer bus web
printf '   memory and runner killed; composer, bus and web passed %s health probes meanwhile\n' "$(wc -l <"$PROBES")"
dc up -d >>"$LOG" 2>&1 || fail "docker compose up -d after docker kill of memory and the runner failed (its output: $LOG)"
play_resumes "docker kill and up -d"
web_console
done_phase

begin "down, up: the swarm continues"
dc down >>"$LOG" 2>&1 || fail "docker compose down failed"
dc up -d >>"$LOG" 2>&1 || fail "the second docker compose up failed"
play_resumes "down and up"
[ "$(earners)" -ge "$MYSES" ] || fail "after down/up the game lost the myses' earnings: $(stats | tr '\n' ';')"
cli_list
wait_until 120 "the web container's health check after down/up" web_healthy
web_console
done_phase

begin "down -v"
dc down -v --remove-orphans >>"$LOG" 2>&1 || fail "docker compose down -v failed (its output: $LOG)"
done_phase
passed=1
printf 'compose-check: passed in %ss (build and up output: %s)\n' "$(( $(date +%s) - t0 ))" "$LOG"
