#!/usr/bin/env bash
# Builds every image the k8s check runs, without a registry or a Docker engine, as OCI archives in $CACHE/images
# (one per image, `ctr -n k8s.io images import` loads them; the manifests use imagePullPolicy: Never or the images
# are present, so nothing is pulled):
#   zoea/{memory,composer,runner,bus,spacemolt-sim,zoea}:$TAG  static binaries of this checkout (make build's
#       packages), on a distroless-like root: CA bundle, zoneinfo, /etc/passwd with nonroot 65532, /tmp; as
#       deploy/docker/Dockerfile's stages (same entrypoints, same user, the simulator's /data owned by 65532);
#   zoea/...:$TAG2  the same binaries with another config (ZOEA_IMAGE_REV), the "new release" the rolling update rolls to;
#   postgres:16   Debian 12's PostgreSQL 15 (debootstrap), postgres as uid 999 as upstream, behind
#                 deploy/docker/standins/postgres-entrypoint.sh (POSTGRES_DB/USER/PASSWORD, init once), STOPSIGNAL SIGINT;
#   nats:2-alpine nats-server (the version libs/testsupport/natstest pins), static, from the module proxy;
#   zoea.local/pause:3.10, zoea.local/coredns:$COREDNS_VERSION, zoea.local/metrics-server:$METRICS_SERVER_VERSION:
#                 the cluster's own pieces, built from the kubernetes module's pause.c and the Go modules.
# Each image is rebuilt only when what it is made of changed (a key file beside it).
set -euo pipefail
cd "$(dirname "$0")/../../.."
REPO=$PWD
CACHE=${ZOEA_K8S_CACHE:-/var/cache/zoea-k8s}
K8S_VERSION=${K8S_VERSION:-v1.34.4}
TAG=${ZOEA_K8S_TAG:-dev}
TAG2=${ZOEA_K8S_TAG2:-dev-rollout}
COREDNS_VERSION=${COREDNS_VERSION:-v1.12.1}
METRICS_SERVER_VERSION=${METRICS_SERVER_VERSION:-v0.8.0}
MIRROR=${ZOEA_DEBIAN_MIRROR:-http://deb.debian.org/debian}
OUT=$CACHE/images
mkdir -p "$OUT" "$CACHE/work"
say() { printf 'images: %s\n' "$*" >&2; }
die() { printf 'images: %s\n' "$*" >&2; exit 1; }

# oci_pack NAME ROOTDIR CONFIGJSON: an OCI image archive $OUT/<file>.tar of one layer (ROOTDIR as it is, numeric
# owners kept) whose index names it NAME (io.containerd.image.name). CONFIGJSON is the image config's "config" object.
oci_pack() {
  local name=$1 root=$2 cfg=$3 w file diffid ldig lsize cdig csize mdig msize
  file=$OUT/$(printf '%s' "$name" | tr '/:' '__').tar
  w=$(mktemp -d "$CACHE/work/oci.XXXXXX")
  mkdir -p "$w/blobs/sha256"
  tar --sort=name --mtime=@0 --numeric-owner -C "$root" -cf "$w/layer.tar" .
  diffid=$(sha256sum "$w/layer.tar" | cut -d' ' -f1)
  gzip -n -1 "$w/layer.tar"
  ldig=$(sha256sum "$w/layer.tar.gz" | cut -d' ' -f1); lsize=$(stat -c %s "$w/layer.tar.gz")
  mv "$w/layer.tar.gz" "$w/blobs/sha256/$ldig"
  jq -cn --argjson c "$cfg" --arg d "sha256:$diffid" \
    '{architecture:"amd64",os:"linux",config:$c,rootfs:{type:"layers",diff_ids:[$d]}}' >"$w/config.json"
  cdig=$(sha256sum "$w/config.json" | cut -d' ' -f1); csize=$(stat -c %s "$w/config.json")
  mv "$w/config.json" "$w/blobs/sha256/$cdig"
  jq -cn --arg cd "sha256:$cdig" --argjson cs "$csize" --arg ld "sha256:$ldig" --argjson ls "$lsize" \
    '{schemaVersion:2,mediaType:"application/vnd.oci.image.manifest.v1+json",
      config:{mediaType:"application/vnd.oci.image.config.v1+json",digest:$cd,size:$cs},
      layers:[{mediaType:"application/vnd.oci.image.layer.v1.tar+gzip",digest:$ld,size:$ls}]}' >"$w/manifest.json"
  mdig=$(sha256sum "$w/manifest.json" | cut -d' ' -f1); msize=$(stat -c %s "$w/manifest.json")
  mv "$w/manifest.json" "$w/blobs/sha256/$mdig"
  jq -cn --arg md "sha256:$mdig" --argjson ms "$msize" --arg n "$name" --arg t "${name##*:}" \
    '{schemaVersion:2,manifests:[{mediaType:"application/vnd.oci.image.manifest.v1+json",digest:$md,size:$ms,
      platform:{architecture:"amd64",os:"linux"},
      annotations:{"io.containerd.image.name":$n,"org.opencontainers.image.ref.name":$t}}]}' >"$w/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$w/oci-layout"
  tar -C "$w" -cf "$file.tmp" oci-layout index.json blobs
  mv "$file.tmp" "$file"
  rm -rf "$w"
}

# fresh KEY NAME: true when the archive of NAME was built from KEY.
fresh() { [[ -f $OUT/$(printf '%s' "$2" | tr '/:' '__').tar && "$(cat "$OUT/$(printf '%s' "$2" | tr '/:' '__').key" 2>/dev/null)" == "$1" ]]; }
mark() { printf '%s' "$1" >"$OUT/$(printf '%s' "$2" | tr '/:' '__').key"; }

host_cas() {
  mkdir -p "$1/etc/ssl/certs"
  cp /etc/ssl/certs/ca-certificates.crt "$1/etc/ssl/certs/ca-certificates.crt"
}

# A minimal root like distroless/static-debian12:nonroot.
static_root() {
  local d=$1
  rm -rf "$d"; mkdir -p "$d/etc" "$d/tmp" "$d/home/nonroot" "$d/usr/share" "$d/usr/local/bin"
  chmod 1777 "$d/tmp"; chown 65532:65532 "$d/home/nonroot"
  host_cas "$d"
  cp -a /usr/share/zoneinfo "$d/usr/share/zoneinfo"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$d/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$d/etc/group"
}

zoea_images() {
  local bin=$CACHE/work/zoea-bin s key d ep
  mkdir -p "$bin"
  say "building Zoea's binaries (CGO_ENABLED=0, as deploy/docker/Dockerfile)"
  CGO_ENABLED=0 GOFLAGS=-buildvcs=false nice -n 10 go build -trimpath -ldflags="-s -w -X main.version=$TAG" -o "$bin/" \
    ./services/memory/cmd/memory ./services/composer/cmd/composer ./services/runner/cmd/runner \
    ./services/bus/cmd/bus ./services/spacemolt-sim/cmd/spacemolt-sim ./cmd/zoea
  for s in memory composer runner bus spacemolt-sim zoea; do
    key=$(sha256sum "$bin/$s" | cut -d' ' -f1)-v2
    if fresh "$key" "docker.io/zoea/$s:$TAG" && fresh "$key" "docker.io/zoea/$s:$TAG2"; then continue; fi
    d=$CACHE/work/root-$s
    static_root "$d"
    install -m 0755 "$bin/$s" "$d/usr/local/bin/$s"
    if [[ $s == spacemolt-sim ]]; then mkdir -p "$d/data"; chown 65532:65532 "$d/data"; fi
    ep=$(jq -cn --arg b "/usr/local/bin/$s" '[$b]')
    oci_pack "docker.io/zoea/$s:$TAG" "$d" "$(jq -cn --argjson e "$ep" \
      '{Entrypoint:$e,User:"65532:65532",WorkingDir:"/home/nonroot",Env:["PATH=/usr/local/bin:/usr/bin:/bin","SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"]}')"
    oci_pack "docker.io/zoea/$s:$TAG2" "$d" "$(jq -cn --argjson e "$ep" --arg t "$TAG2" \
      '{Entrypoint:$e,User:"65532:65532",WorkingDir:"/home/nonroot",Env:["PATH=/usr/local/bin:/usr/bin:/bin","SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",("ZOEA_IMAGE_REV="+$t)]}')"
    mark "$key" "docker.io/zoea/$s:$TAG"; mark "$key" "docker.io/zoea/$s:$TAG2"
    rm -rf "$d"
    say "zoea/$s:$TAG and :$TAG2 packed"
  done
}

rootfs() {
  local root=$CACHE/rootfs/bookworm
  if [[ ! -f $root/.complete ]]; then
    say "debootstrap bookworm into $root (once)"
    rm -rf "$root"; mkdir -p "$CACHE/rootfs"
    debootstrap --variant=minbase --include=ca-certificates bookworm "$root" "$MIRROR" >"$CACHE/rootfs/debootstrap.log" 2>&1 \
      || die "debootstrap failed: see $CACHE/rootfs/debootstrap.log"
    touch "$root/.complete"
  fi
  printf '%s' "$root"
}

postgres_image() {
  local name=docker.io/library/postgres:16 key d src
  key=$(sha256sum deploy/docker/standins/postgres-entrypoint.sh | cut -d' ' -f1)-v1
  fresh "$key" "$name" && return 0
  src=$(rootfs)
  d=$CACHE/work/root-postgres
  rm -rf "$d"; mkdir -p "$d"; cp -a "$src/." "$d/"; rm -f "$d/.complete"
  host_cas "$d"
  cp /etc/resolv.conf "$d/etc/resolv.conf"
  say "installing Debian's PostgreSQL 15 into postgres:16 (postgres as uid 999, as the official image)"
  chroot "$d" /usr/bin/env DEBIAN_FRONTEND=noninteractive bash -c \
    'groupadd -r -g 999 postgres && useradd -r -u 999 -g 999 -d /var/lib/postgresql -s /bin/bash postgres &&
     apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null && apt-get clean' \
    >"$CACHE/work/postgres-apt.log" 2>&1 || die "apt-get in the postgres image failed: see $CACHE/work/postgres-apt.log"
  rm -rf "$d/var/lib/apt/lists/"* "$d/var/lib/postgresql/15" "$d/var/cache/apt/"*.bin
  : >"$d/etc/resolv.conf"
  install -m 0755 deploy/docker/standins/postgres-entrypoint.sh "$d/usr/local/bin/docker-entrypoint.sh"
  mkdir -p "$d/var/lib/postgresql/data" "$d/var/run/postgresql"
  chown -R 999:999 "$d/var/lib/postgresql" "$d/var/run/postgresql"
  oci_pack "$name" "$d" '{"Entrypoint":["docker-entrypoint.sh"],"Cmd":["postgres"],"StopSignal":"SIGINT",
    "Env":["PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","PGDATA=/var/lib/postgresql/data"],
    "ExposedPorts":{"5432/tcp":{}}}'
  mark "$key" "$name"; rm -rf "$d"
  say "postgres:16 packed"
}

# go_tool DIR MODULE@VERSION PKG OUT: builds PKG statically from a module of its own in DIR.
go_tool() {
  local dir=$1 modver=$2 pkg=$3 out=$4
  [[ -x $out ]] && return 0
  mkdir -p "$dir"
  ( cd "$dir"
    [[ -f go.mod ]] || go mod init zoea.local/tool >/dev/null 2>&1
    GOFLAGS=-mod=mod go get "$modver" >/dev/null 2>&1 || GOFLAGS=-mod=mod go get "$modver"
    CGO_ENABLED=0 GOFLAGS=-mod=mod nice -n 10 go build -trimpath -ldflags='-s -w' -o "$out" "$pkg" )
}

nats_image() {
  local name=docker.io/library/nats:2-alpine version d
  version=$(sed -n 's/^const Version = "\(v[^"]*\)"$/\1/p' libs/testsupport/natstest/binary.go)
  [[ -n $version ]] || die "libs/testsupport/natstest/binary.go does not pin nats-server (const Version)"
  fresh "$version" "$name" && return 0
  say "building nats-server $version"
  go_tool "$CACHE/work/nats-src" "github.com/nats-io/nats-server/v2@$version" github.com/nats-io/nats-server/v2 "$CACHE/bin/nats-server-$version"
  d=$CACHE/work/root-nats
  static_root "$d"
  printf 'nats:x:1000:1000:nats:/tmp:/sbin/nologin\n' >>"$d/etc/passwd"
  install -m 0755 "$CACHE/bin/nats-server-$version" "$d/usr/local/bin/nats-server"
  oci_pack "$name" "$d" '{"Entrypoint":[],"Cmd":["nats-server"],"Env":["PATH=/usr/local/bin:/bin"]}'
  mark "$version" "$name"; rm -rf "$d"
}

pause_image() {
  local name=zoea.local/pause:3.10 d src
  src=$(go env GOMODCACHE)/k8s.io/kubernetes@$K8S_VERSION/build/pause/linux/pause.c
  [[ -f $src ]] || die "$src missing (build-k8s.sh downloads the module)"
  fresh "$K8S_VERSION" "$name" && return 0
  d=$CACHE/work/root-pause; rm -rf "$d"; mkdir -p "$d"
  gcc -Os -static -DVERSION=3.10 -o "$d/pause" "$src"
  strip "$d/pause"
  oci_pack "$name" "$d" '{"Entrypoint":["/pause"],"User":"65535:65535"}'
  mark "$K8S_VERSION" "$name"; rm -rf "$d"
}

# CoreDNS with only the plugins the cluster's Corefile uses (the documented way to trim a build: a main that
# imports the server and the chosen plugins), so no cloud SDK is compiled.
coredns_image() {
  local name=zoea.local/coredns:$COREDNS_VERSION dir=$CACHE/work/coredns-src d
  fresh "$COREDNS_VERSION" "$name" && return 0
  if [[ ! -x $CACHE/bin/coredns-$COREDNS_VERSION ]]; then
    say "building CoreDNS $COREDNS_VERSION (kubernetes, errors, health, ready, cache, loop, reload, log)"
    mkdir -p "$dir"
    cat >"$dir/main.go" <<'GO'
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	"github.com/coredns/coredns/coremain"
)

var directives = []string{"reload", "ready", "health", "errors", "log", "loop", "cache", "kubernetes"}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
GO
    ( cd "$dir"
      [[ -f go.mod ]] || go mod init zoea.local/coredns >/dev/null 2>&1
      GOFLAGS=-mod=mod go get "github.com/coredns/coredns@$COREDNS_VERSION"
      GOFLAGS=-mod=mod go mod tidy
      CGO_ENABLED=0 GOFLAGS=-mod=mod nice -n 10 go build -trimpath -ldflags='-s -w' -o "$CACHE/bin/coredns-$COREDNS_VERSION" . )
  fi
  d=$CACHE/work/root-coredns; static_root "$d"
  install -m 0755 "$CACHE/bin/coredns-$COREDNS_VERSION" "$d/coredns"
  oci_pack "$name" "$d" '{"Entrypoint":["/coredns"],"User":"65532:65532"}'
  mark "$COREDNS_VERSION" "$name"; rm -rf "$d"
}

metrics_server_image() {
  local name=zoea.local/metrics-server:$METRICS_SERVER_VERSION d
  fresh "$METRICS_SERVER_VERSION" "$name" && return 0
  say "building metrics-server $METRICS_SERVER_VERSION"
  go_tool "$CACHE/work/metrics-server-src" "sigs.k8s.io/metrics-server@$METRICS_SERVER_VERSION" \
    sigs.k8s.io/metrics-server/cmd/metrics-server "$CACHE/bin/metrics-server-$METRICS_SERVER_VERSION"
  d=$CACHE/work/root-ms; static_root "$d"
  install -m 0755 "$CACHE/bin/metrics-server-$METRICS_SERVER_VERSION" "$d/metrics-server"
  oci_pack "$name" "$d" '{"Entrypoint":["/metrics-server"],"User":"65532:65532"}'
  mark "$METRICS_SERVER_VERSION" "$name"; rm -rf "$d"
}

mkdir -p "$CACHE/bin"
# Arguments, or ZOEA_K8S_IMAGES (space-separated), pick image sets; default all.
want=("$@"); [[ ${#want[@]} -gt 0 ]] || read -ra want <<<"${ZOEA_K8S_IMAGES:-pause coredns nats postgres zoea metrics-server}"
for w in "${want[@]}"; do
  case $w in
    pause) pause_image ;; coredns) coredns_image ;; nats) nats_image ;; postgres) postgres_image ;;
    zoea) zoea_images ;; metrics-server) metrics_server_image ;;
    *) die "unknown image set $w" ;;
  esac
done
say "images ready in $OUT"
