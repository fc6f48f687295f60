#!/usr/bin/env bash
# Builds the Kubernetes components the check runs (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
# kube-proxy, kubectl) from the Go module k8s.io/kubernetes, statically, into $CACHE/k8s/bin. Reused when the
# binaries there already report $K8S_VERSION. The module's go.mod replaces k8s.io/X with ./staging/src/k8s.io/X,
# which a dependency's replaces cannot do, so a go.mod of our own maps each of them to the published k8s.io/X v0.N.P.
set -euo pipefail
K8S_VERSION=${K8S_VERSION:-v1.34.4}
CACHE=${ZOEA_K8S_CACHE:-/var/cache/zoea-k8s}
src=$CACHE/k8s/src bin=$CACHE/k8s/bin
cmds=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)

if [[ -f $bin/.version && $(cat "$bin/.version") == "$K8S_VERSION" ]]; then
  ok=1; for c in "${cmds[@]}"; do [[ -x $bin/$c ]] || ok=0; done
  if ((ok)); then echo "k8s binaries $K8S_VERSION cached in $bin"; exit 0; fi
fi
mkdir -p "$src" "$bin"
cd "$src"
staging=${K8S_VERSION/v1./v0.}
dir=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[[ -d $dir ]] || { echo "k8s.io/kubernetes@$K8S_VERSION not served by the module proxy" >&2; exit 1; }
goline=$(sed -n 's/^go \(.*\)/\1/p' "$dir/go.mod")
{
  echo "module zoea.local/k8sbuild"
  echo
  echo "go $goline"
  echo
  echo "require k8s.io/kubernetes $K8S_VERSION"
  echo
  grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging/src/k8s\.io/[a-z0-9-]+' "$dir/go.mod" |
    awk -v v="$staging" '{print "replace " $1 " => " $1 " " v}'
} >go.mod
{
  echo "//go:build tools"
  echo
  echo "package tools"
  echo
  echo "import ("
  for c in "${cmds[@]}"; do echo "	_ \"k8s.io/kubernetes/cmd/$c\""; done
  echo ")"
} >tools.go
export GOFLAGS=-mod=mod
nice -n 10 go mod tidy
commit=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\t\t"Hash": "\(.*\)"$/\1/p' | head -1)
ld="-s -w"
major=${K8S_VERSION#v}; major=${major%%.*}; minor=${K8S_VERSION#v*.}; minor=${minor%%.*}
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  ld+=" -X $p.gitCommit=${commit:-0000000000000000000000000000000000000000} -X $p.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
done
for c in "${cmds[@]}"; do
  echo "building $c $K8S_VERSION"
  CGO_ENABLED=0 nice -n 10 go build -trimpath -tags providerless -ldflags "$ld" -o "$bin/$c" "k8s.io/kubernetes/cmd/$c"
done
echo "$K8S_VERSION" >"$bin/.version"
echo "k8s binaries $K8S_VERSION built in $bin"
