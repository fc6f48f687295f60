#!/usr/bin/env bash
# make fresh-check: README's two commands on a brand-new Debian 12, automatically. Run as root on a Debian/Ubuntu
# host with debootstrap, iproute2 and iptables (docs/FRESH-CHECK.md).
#
#   1. base     debootstrap a minimal bookworm (plus sudo and ca-certificates) once, cached in $CACHE/base;
#   2. root     copy it to $CACHE/run/root: every run starts from the same untouched system;
#   3. prepare  an ordinary user (zoe) with sudo, Go copied from /usr/local/go and put on PATH in /etc/profile.d,
#               the host's extra CA certificates (an intercepting egress proxy's) trusted, the host's resolv.conf,
#               and this checkout's committed HEAD as a bare repository that git's url.insteadOf serves for README's
#               GitHub URL (the machine has no GitHub access; everything else goes over the network as written);
#   4. network  its own network namespace: a veth pair (10.213.87.1 host, .2 namespace), NAT, and a firewall that lets
#               it reach only the DNS resolver and, on ports 80/443, the addresses the Debian mirror, the Go module
#               proxy and the npm registry (the TypeScript MCP SDK test's npm ci) resolve to; the host's own services (its Postgres, its NATS) are not reachable from it;
#   5. one-line README's one line, extracted from README.md and run exactly as written by zoe in a login shell,
#               with DEV_FLAGS='--duration … --expect-earners 3' so that make dev ends on its own: it succeeds once
#               all three myses have earned credits;
#   6. test     `make test` in the clone, as written.
# Each phase has a time limit and is timed; the summary (and a log under $CACHE/logs) says which passed.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
CACHE=${ZOEA_FRESH_CACHE:-/var/cache/zoea-fresh}
MIRROR=${ZOEA_FRESH_MIRROR:-http://deb.debian.org/debian}
LIMIT_ONE_LINE=${ZOEA_FRESH_LIMIT_ONE_LINE:-45m}
LIMIT_TEST=${ZOEA_FRESH_LIMIT_TEST:-75m}
DEV_DURATION=${ZOEA_FRESH_DEV_DURATION:-10m}
NS=zoea-fresh
HOST_IF=zfresh0 NS_IF=zfresh1 HOST_IP=10.213.87.1 NS_IP=10.213.87.2 NET=10.213.87.0/30
ALLOW_HOSTS="deb.debian.org proxy.golang.org sum.golang.org registry.npmjs.org"
USER_NAME=zoe

[ "$(id -u)" -eq 0 ] || { echo "fresh-check: run as root (it debootstraps, mounts and makes a network namespace)" >&2; exit 1; }
for c in debootstrap ip iptables chroot timeout; do
  command -v "$c" >/dev/null || { echo "fresh-check: $c is missing (apt-get install -y debootstrap iproute2 iptables)" >&2; exit 1; }
done
[ -x /usr/local/go/bin/go ] || { echo "fresh-check: no Go in /usr/local/go to copy in" >&2; exit 1; }
git -C "$REPO" diff --quiet HEAD || echo "fresh-check: note: uncommitted changes are not part of the check (it clones HEAD)"

mkdir -p "$CACHE/logs"
LOG="$CACHE/logs/fresh-check-$(date -u +%Y%m%dT%H%M%SZ).log"
exec > >(tee "$LOG") 2>&1
ROOT="$CACHE/run/root"
declare -a SUMMARY=()
FAILED=""

cleanup() {
  set +e
  # Only processes running inside this check's root: the chroot's Postgres, NATS, services and tests.
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$ROOT" ] && kill -9 "${p#/proc/}" 2>/dev/null
  done
  sleep 1
  for m in dev/pts dev/shm dev proc sys tmp; do mountpoint -q "$ROOT/$m" && umount -l "$ROOT/$m"; done
  ip netns del "$NS" 2>/dev/null
  ip link del "$HOST_IF" 2>/dev/null
  iptables -D FORWARD -j ZOEA-FRESH 2>/dev/null
  iptables -D INPUT -i "$HOST_IF" -j ZOEA-FRESH-IN 2>/dev/null
  iptables -F ZOEA-FRESH 2>/dev/null; iptables -X ZOEA-FRESH 2>/dev/null
  iptables -F ZOEA-FRESH-IN 2>/dev/null; iptables -X ZOEA-FRESH-IN 2>/dev/null
  iptables -t nat -D POSTROUTING -s "$NET" -j MASQUERADE 2>/dev/null
}
trap cleanup EXIT
cleanup

# phase NAME LIMIT CMD…: runs CMD with a time limit, records how long it took and whether it passed.
phase() {
  local name=$1 limit=$2; shift 2
  echo
  echo "=== fresh-check: $name (limit $limit) — $(date -u +%H:%M:%S)"
  local t0=$SECONDS rc=0
  # A fresh bash runs the step (functions and settings are exported below), so timeout can stop it.
  timeout --kill-after=30s "$limit" bash -c '"$@"' fresh-check "$@" || rc=$?
  local took=$((SECONDS - t0)) verdict=ok
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then verdict="TIMED OUT"; elif [ $rc -ne 0 ]; then verdict="FAILED (exit $rc)"; fi
  SUMMARY+=("$(printf '%-9s %4dm%02ds  %s' "$name" $((took / 60)) $((took % 60)) "$verdict")")
  echo "=== fresh-check: $name: $verdict in ${took}s"
  if [ "$verdict" != ok ]; then FAILED=$name; return 1; fi
}

summary() {
  echo
  echo "=== fresh-check summary ($(date -u +%Y-%m-%dT%H:%MZ), log $LOG)"
  printf '  %s\n' "${SUMMARY[@]}"
  [ -f "$ROOT/var/log/sudo.log" ] && echo "  sudo was used $(grep -c 'COMMAND=' "$ROOT/var/log/sudo.log") time(s):" &&
    grep -o 'COMMAND=.*' "$ROOT/var/log/sudo.log" | sed 's/^/    /'
  if [ -n "$FAILED" ]; then echo "  RESULT: FAILED at $FAILED"; else echo "  RESULT: PASSED"; fi
}

base() {
  [ -x "$CACHE/base/usr/bin/sudo" ] && { echo "cached: $CACHE/base"; return; }
  rm -rf "$CACHE/base.tmp"
  debootstrap --variant=minbase --include=sudo,ca-certificates bookworm "$CACHE/base.tmp" "$MIRROR"
  mv "$CACHE/base.tmp" "$CACHE/base"
}

copy_root() {
  rm -rf "$CACHE/run"
  mkdir -p "$CACHE/run"
  cp -a "$CACHE/base" "$ROOT"
}

prepare() {
  mount -t proc proc "$ROOT/proc"
  mount -t sysfs sys "$ROOT/sys"
  mount -t tmpfs -o mode=755 dev "$ROOT/dev"
  for n in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
    IFS=: read -r name maj min <<<"$n"
    mknod -m 666 "$ROOT/dev/$name" c "$maj" "$min"
  done
  mkdir -p "$ROOT/dev/pts" "$ROOT/dev/shm"
  mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$ROOT/dev/pts"
  ln -s pts/ptmx "$ROOT/dev/ptmx"
  mount -t tmpfs -o mode=1777 shm "$ROOT/dev/shm"
  mount -t tmpfs -o mode=1777 tmp "$ROOT/tmp"
  ln -sf /proc/self/fd "$ROOT/dev/fd"

  cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
  # debootstrap writes no /etc/hosts; Debian's installer writes this one (the root shares the host's name).
  printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$(hostname)" >"$ROOT/etc/hosts"
  cp -a /usr/local/go "$ROOT/usr/local/go"
  echo 'export PATH=$PATH:/usr/local/go/bin' >"$ROOT/etc/profile.d/go.sh" # as go.dev/doc/install says
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
    chroot "$ROOT" update-ca-certificates >/dev/null
  fi
  chroot "$ROOT" useradd -m -s /bin/bash -G sudo "$USER_NAME"
  # No password to type in an unattended run; every use is logged, and the summary lists them.
  printf '%s ALL=(ALL) NOPASSWD: ALL\nDefaults logfile=/var/log/sudo.log\n' "$USER_NAME" >"$ROOT/etc/sudoers.d/zoe"
  chmod 440 "$ROOT/etc/sudoers.d/zoe"

  git clone -q --bare "$REPO" "$ROOT/srv/zoea.git"
  git -C "$ROOT/srv/zoea.git" symbolic-ref HEAD "refs/heads/$(git -C "$REPO" rev-parse --abbrev-ref HEAD)"
  chroot "$ROOT" chown -R "$USER_NAME:" /srv/zoea.git
  printf '[url "file:///srv/zoea.git"]\n\tinsteadOf = https://github.com/zoeaswarm/zoea.git\n' >"$ROOT/home/$USER_NAME/.gitconfig"
  chroot "$ROOT" chown "$USER_NAME:" "/home/$USER_NAME/.gitconfig"
  echo "cloning serves $(git -C "$REPO" rev-parse --short HEAD) ($(git -C "$REPO" rev-parse --abbrev-ref HEAD))"
}

network() {
  local dns allowed=()
  dns=$(awk '/^nameserver/ {print $2; exit}' /etc/resolv.conf)
  for h in $ALLOW_HOSTS; do
    while read -r a; do allowed+=("$a"); done < <(getent ahostsv4 "$h" | awk '{print $1}' | sort -u)
  done
  mapfile -t allowed < <(printf '%s\n' "${allowed[@]}" | sort -u)
  echo "namespace $NS may reach: DNS $dns, and ports 80/443 of ${allowed[*]} ($ALLOW_HOSTS)"
  ip netns add "$NS"
  ip link add "$HOST_IF" type veth peer name "$NS_IF"
  ip link set "$NS_IF" netns "$NS"
  ip addr add "$HOST_IP/30" dev "$HOST_IF"
  ip link set "$HOST_IF" up
  ip netns exec "$NS" ip addr add "$NS_IP/30" dev "$NS_IF"
  ip netns exec "$NS" ip link set "$NS_IF" up
  ip netns exec "$NS" ip link set lo up
  ip netns exec "$NS" ip route add default via "$HOST_IP"
  sysctl -qw net.ipv4.ip_forward=1
  iptables -N ZOEA-FRESH
  iptables -A ZOEA-FRESH -o "$HOST_IF" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
  iptables -A ZOEA-FRESH -i "$HOST_IF" -d "$dns" -p udp --dport 53 -j ACCEPT
  iptables -A ZOEA-FRESH -i "$HOST_IF" -d "$dns" -p tcp --dport 53 -j ACCEPT
  for a in "${allowed[@]}"; do
    iptables -A ZOEA-FRESH -i "$HOST_IF" -d "$a" -p tcp -m multiport --dports 80,443 -j ACCEPT
  done
  iptables -A ZOEA-FRESH -i "$HOST_IF" -j DROP
  iptables -A ZOEA-FRESH -o "$HOST_IF" -j DROP
  iptables -I FORWARD 1 -j ZOEA-FRESH
  # Nothing on the host itself (its Postgres, its NATS, other helpers' swarms) answers the namespace.
  iptables -N ZOEA-FRESH-IN
  iptables -A ZOEA-FRESH-IN -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
  iptables -A ZOEA-FRESH-IN -j DROP
  iptables -I INPUT 1 -i "$HOST_IF" -j ZOEA-FRESH-IN
  iptables -t nat -A POSTROUTING -s "$NET" -j MASQUERADE
  # Proof of both directions: the mirror answers, the host's Postgres does not.
  ip netns exec "$NS" chroot "$ROOT" bash -c "exec 3<>/dev/tcp/deb.debian.org/80" && echo "mirror reachable"
  if ip netns exec "$NS" chroot "$ROOT" timeout 3 bash -c "exec 3<>/dev/tcp/$HOST_IP/5432" 2>/dev/null; then
    echo "the host's Postgres is reachable from the namespace: firewall not effective" >&2
    return 1
  fi
  echo "host services unreachable from the namespace"
}

# as_user CMD: CMD in a login shell of the ordinary user, inside the namespace and the root, without a terminal.
as_user() {
  ip netns exec "$NS" chroot "$ROOT" /bin/su - "$USER_NAME" -c "$1" </dev/null
}

ONE_LINE=$(awk '/<!-- fresh-check: the one line/ {f=1; next} f && /^```/ {if (b) exit; b=1; next} f && b {print; exit}' README.md)
[ -n "$ONE_LINE" ] || { echo "fresh-check: README.md has no marked one line" >&2; exit 1; }
echo "README's one line: $ONE_LINE"

export -f base copy_root prepare network as_user
export CACHE MIRROR REPO ROOT NS HOST_IF NS_IF HOST_IP NS_IP NET USER_NAME ALLOW_HOSTS SHELLOPTS

run() {
  phase base 30m base &&
    phase root 10m copy_root &&
    phase prepare 10m prepare &&
    phase network 2m network &&
    phase one-line "$LIMIT_ONE_LINE" as_user "export DEV_FLAGS='--duration $DEV_DURATION --expect-earners 3'; $ONE_LINE" &&
    phase test "$LIMIT_TEST" as_user "cd zoea && make test"
}
rc=0
run || rc=1
summary
exit $rc
