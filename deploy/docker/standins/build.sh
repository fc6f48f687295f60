#!/usr/bin/env bash
# Builds local stand-ins for the base images Zoea's Dockerfile and docker-compose.yml name, for a machine whose Docker
# engine cannot pull from an image registry (an air-gapped lab, a CI sandbox). An image that is already present, or
# that `docker pull` fetches, is left alone: on a connected machine this script does nothing but pull.
#
#   sudo bash deploy/docker/standins/build.sh            # every missing base image
#   sudo bash deploy/docker/standins/build.sh golang:1.26   # just the named ones
#
# The stand-ins are built from Debian 12 (debootstrap) and this machine's own Go, and behave as the real images do
# for what Zoea uses of them:
#   golang:1.26                               Debian 12 + this machine's Go toolchain (GOPATH /go, PATH as upstream)
#   gcr.io/distroless/static-debian12:nonroot  CA bundle, zoneinfo, /etc/passwd with nonroot (65532), nothing else
#   postgres:16                               Debian's PostgreSQL 15 behind an entrypoint that honours POSTGRES_DB,
#                                             POSTGRES_USER, POSTGRES_PASSWORD and initialises an empty data dir once
#   nats:2-alpine                             nats-server (the version libs/testsupport/natstest pins, built from the module proxy)
#                                             plus busybox (static, from Debian) for the health check's wget
# Every stand-in trusts this machine's CA certificates, so a container reaches the module proxy through the same TLS
# proxy the host uses. Needs root (debootstrap, chroot), debootstrap, and Go. The Debian root is cached in
# ZOEA_STANDIN_CACHE (default /var/cache/zoea-standins) so a second run takes seconds.
set -euo pipefail
cd "$(dirname "$0")/../../.."
CACHE="${ZOEA_STANDIN_CACHE:-/var/cache/zoea-standins}"
MIRROR="${ZOEA_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
ALL=(golang:1.26 gcr.io/distroless/static-debian12:nonroot postgres:16 nats:2-alpine)
want=("$@")
[ ${#want[@]} -gt 0 ] || want=("${ALL[@]}")

say() { printf 'standins: %s\n' "$*" >&2; }
die() { printf 'standins: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (sudo bash $0): debootstrap and chroot need it"
command -v docker >/dev/null || die "no docker CLI on PATH"
docker info >/dev/null 2>&1 || die "the Docker engine does not answer (is dockerd running?)"
command -v go >/dev/null || die "no go on PATH: the golang and nats stand-ins are built from this machine's Go"

present() { docker image inspect "$1" >/dev/null 2>&1; }
pulled() { timeout "${ZOEA_PULL_TIMEOUT:-30}" docker pull -q "$1" >/dev/null 2>&1; }

# A minimal Debian 12 root, made once. Kept unmodified: each stand-in copies what it needs.
rootfs() {
  local root="$CACHE/bookworm"
  if [ ! -f "$root/.complete" ]; then
    command -v debootstrap >/dev/null || die "debootstrap is missing: apt-get install debootstrap"
    say "debootstrap bookworm into $root (once)"
    rm -rf "$root"; mkdir -p "$CACHE"
    debootstrap --variant=minbase --include=ca-certificates,tzdata,busybox-static bookworm "$root" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
      || die "debootstrap failed: see $CACHE/debootstrap.log"
    touch "$root/.complete"
  fi
  printf '%s' "$root"
}

# The host's CA bundle into a root, so TLS through this machine's proxy verifies inside containers.
trust_host_cas() {
  local root=$1
  mkdir -p "$root/etc/ssl/certs" "$root/usr/local/share/ca-certificates"
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  fi
}

# A copy of the Debian root with the host's CAs, for images built on it.
debian_copy() {
  local dst=$1 src
  src=$(rootfs)
  rm -rf "$dst"; mkdir -p "$dst"
  cp -a "$src/." "$dst/"
  rm -f "$dst/.complete"
  trust_host_cas "$dst"
}

# docker import of a directory, with Dockerfile instructions applied.
import_dir() {
  local dir=$1 tag=$2; shift 2
  local changes=()
  for c in "$@"; do changes+=(--change "$c"); done
  tar -C "$dir" -c . | docker import "${changes[@]}" - "$tag" >/dev/null
}

build_golang() {
  local tag=$1 dir="$CACHE/work/golang" goroot
  goroot=$(go env GOROOT)
  debian_copy "$dir"
  mkdir -p "$dir/usr/local" "$dir/go/bin" "$dir/go/src"
  cp -a "$goroot" "$dir/usr/local/go"
  chmod -R 1777 "$dir/go"
  import_dir "$dir" "$tag" \
    'ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    'ENV GOPATH=/go' 'ENV GOLANG_VERSION=local' 'WORKDIR /go' 'CMD ["bash"]'
}

build_distroless() {
  local tag=$1 dir="$CACHE/work/distroless" src
  src=$(rootfs)
  rm -rf "$dir"; mkdir -p "$dir/etc" "$dir/tmp" "$dir/home/nonroot" "$dir/usr/share"
  chmod 1777 "$dir/tmp"; chown 65532:65532 "$dir/home/nonroot"
  trust_host_cas "$dir"
  cp -a "$src/usr/share/zoneinfo" "$dir/usr/share/zoneinfo"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$dir/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$dir/etc/group"
  import_dir "$dir" "$tag" 'USER 65532:65532' 'WORKDIR /home/nonroot'
}

build_postgres() {
  local tag=$1 dir="$CACHE/work/postgres"
  debian_copy "$dir"
  cp /etc/resolv.conf "$dir/etc/resolv.conf"
  say "installing Debian's PostgreSQL into the postgres stand-in"
  chroot "$dir" /usr/bin/env DEBIAN_FRONTEND=noninteractive bash -c \
    'apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null && apt-get clean' \
    >"$CACHE/postgres-apt.log" 2>&1 || die "apt-get in the postgres stand-in failed: see $CACHE/postgres-apt.log"
  rm -rf "$dir/var/lib/apt/lists/"* "$dir/var/lib/postgresql/15"
  : >"$dir/etc/resolv.conf"
  install -m 0755 deploy/docker/standins/postgres-entrypoint.sh "$dir/usr/local/bin/docker-entrypoint.sh"
  mkdir -p "$dir/var/lib/postgresql/data" "$dir/var/run/postgresql"
  chroot "$dir" chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
  import_dir "$dir" "$tag" \
    'ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    'ENV PGDATA=/var/lib/postgresql/data' 'VOLUME /var/lib/postgresql/data' 'EXPOSE 5432' \
    'ENTRYPOINT ["docker-entrypoint.sh"]' 'CMD ["postgres"]'
  # docker import cannot set STOPSIGNAL; SIGINT is Postgres's fast shutdown (SIGTERM would wait for every client).
  printf 'FROM %s\nSTOPSIGNAL SIGINT\n' "$tag" | docker build -q -t "$tag" - >/dev/null
}

build_nats() {
  local tag=$1 dir="$CACHE/work/nats" version
  version=$(sed -n 's/^const Version = "\(v[^"]*\)"$/\1/p' libs/testsupport/natstest/binary.go)
  [ -n "$version" ] || die "libs/testsupport/natstest/binary.go does not pin nats-server (const Version)"
  rm -rf "$dir"; mkdir -p "$dir/bin" "$dir/usr/local/bin" "$dir/etc/nats" "$dir/tmp"
  chmod 1777 "$dir/tmp"
  say "building nats-server $version from the module proxy"
  GOBIN="$dir/usr/local/bin" CGO_ENABLED=0 GOFLAGS=-mod=mod go install "github.com/nats-io/nats-server/v2@$version"
  cp "$(rootfs)/bin/busybox" "$dir/bin/busybox"
  for a in sh wget ls cat; do ln -s busybox "$dir/bin/$a"; done
  trust_host_cas "$dir"
  printf 'root:x:0:0:root:/root:/bin/sh\nnats:x:1000:1000:nats:/tmp:/bin/sh\n' >"$dir/etc/passwd"
  import_dir "$dir" "$tag" 'ENV PATH=/usr/local/bin:/bin' 'EXPOSE 4222 8222 6222' \
    'ENTRYPOINT []' 'CMD ["nats-server"]'
}

for image in "${want[@]}"; do
  if present "$image"; then say "$image: present"; continue; fi
  if pulled "$image"; then say "$image: pulled"; continue; fi
  say "$image: cannot be pulled here; building a local stand-in"
  case "$image" in
    golang:*) build_golang "$image" ;;
    gcr.io/distroless/static-debian12:*) build_distroless "$image" ;;
    postgres:*) build_postgres "$image" ;;
    nats:*) build_nats "$image" ;;
    *) die "no stand-in recipe for $image (have: ${ALL[*]})" ;;
  esac
  say "$image: built"
done
