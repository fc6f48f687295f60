#!/usr/bin/env bash
# make k8s-check: deploy/k8s applied to a real single-node Kubernetes built on this machine, and tried as an operator
# would (docs/DEPLOY.md, "Kubernetes"). Phases, each timed:
#   1. build   Kubernetes from its Go module (build-k8s.sh) and every image without a registry (build-images.sh),
#              both cached in $ZOEA_K8S_CACHE (default /var/cache/zoea-k8s): the second run only re-packs Zoea
#   2. up      the cluster (cluster.sh up): node Ready, CoreDNS and metrics-server
#   3. dry-run kubectl apply --dry-run=server of the prod overlay (its external pieces absent, stated)
#   4. dev     kubectl apply -k deploy/k8s/overlays/dev: every Deployment and StatefulSet Ready, probes true, the
#              migration, NATS provisioning and seed Jobs complete, three myses earning credits in the simulator
#   5. scale   the runner 1 → 3 → 1 (the HPA held off meanwhile): myses spread over the replicas and back
#   6. rollout a new image tag of every service under play: no mysis ERRORED, the longest pause in play measured
#   7. delete  kubectl delete pod of each service, Postgres and NATS: time until Ready again and play resumed
#   8. pdb     an eviction the PodDisruptionBudget must refuse
#   9. secrets no secret value in any pod's log or in kubectl describe
#  10. tally   every mysis's history: turns lost, calls answered twice (scaleload -tally, the counts of issue 31)
#  11. down    teardown, and the host compared with its state before: processes, mounts, iptables, links, routes,
#              /run paths, sysctls, cgroups
# Needs root, Go, and Debian's etcd-server, containerd, runc, containernetworking-plugins, iptables, conntrack,
# debootstrap, jq, curl (installed when missing). ZOEA_K8S_KEEP=1 leaves the cluster up at the end (or on failure).
set -euo pipefail
cd "$(dirname "$0")/../../.."
REPO=$PWD
HERE=$REPO/deploy/k8s/check
CACHE=${ZOEA_K8S_CACHE:-/var/cache/zoea-k8s}
export ZOEA_K8S_CACHE=$CACHE
BIN=$CACHE/k8s/bin
KCFG=/var/lib/zoea-k8s/pki/admin.kubeconfig
NS=zoea-dev
TOKEN=dev-admin-token-change-me
TAG=dev TAG2=dev-rollout
OUT=${ZOEA_K8S_OUT:-$CACHE/runs/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
KUBECTL=${KUBECTL:-$BIN/kubectl}
k() { "$KUBECTL" --kubeconfig "$KCFG" "$@"; }
kn() { k -n "$NS" "$@"; }
say() { printf '%s\n' "$*" | tee -a "$SUMMARY"; }
phase=none; phase_t0=$SECONDS; t_all=$SECONDS
begin() { phase=$1; phase_t0=$SECONDS; say "== $phase"; }
end_phase() { say "   $phase: $((SECONDS - phase_t0))s"; }
failures=0
miss() { say "   MISS: $*"; failures=$((failures + 1)); }
die() {
  say "k8s-check: FAILED in $phase: $*"
  [[ -f $KCFG ]] && { k get pods -A -o wide >"$OUT/pods-at-failure.txt" 2>&1 || true; }
  cleanup_pf
  if [[ -z ${ZOEA_K8S_KEEP:-} ]]; then "$HERE/cluster.sh" down >>"$OUT/down.log" 2>&1 || true; fi
  say "k8s-check: logs in $OUT"
  exit 1
}
trap 'die "interrupted"' INT TERM
trap 'rc=$?; [[ $rc -eq 0 ]] || die "a command failed (exit $rc) at line $LINENO"' ERR
[[ $(id -u) -eq 0 ]] || { echo "k8s-check: run as root (the cluster's kubelet, containerd and network need it)" >&2; exit 1; }

# ---- host state, compared after teardown ------------------------------------------------------------------------
# Docker's own objects are left out: a Docker engine of someone else may come and go meanwhile.
snapshot() {
  local d=$1; mkdir -p "$d"
  ps -eo args= | grep -E '(^|/)(etcd|containerd|kube-apiserver|kube-controller-manager|kube-scheduler|kubelet|kube-proxy|containerd-shim-runc-v2|coredns|metrics-server|nats-server|postgres)( |$)' \
    | grep -v -e /var/run/docker -e moby -e grep | grep -E 'zoea-k8s|kube|/pause' | sort >"$d/processes" || true
  awk '{print $5, $9}' /proc/self/mountinfo | grep -vE '/var/lib/docker|/run/docker|/var/run/docker' | sort >"$d/mounts"
  for t in filter nat mangle raw; do iptables-save -t "$t" 2>/dev/null | grep -E '^(-A|:)' | sed 's/\[[0-9:]*\]//' \
    | grep -vE 'DOCKER|docker0|br-[0-9a-f]{12}' | sort | sed "s/^/$t /"; done >"$d/iptables"
  ip -o link | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -vE '^(veth|br-|docker)' | sort >"$d/links"
  ip -o link show master "zk8s0" 2>/dev/null | wc -l >"$d/bridge-ports"
  ip route | grep -vE 'br-[0-9a-f]{12}|docker0' | sort >"$d/routes"
  find /run /var/run/netns /var/lib/cni -maxdepth 3 2>/dev/null | grep -vE '^/run/(docker|user|lock|log|systemd)|^/run/containerd/(s/|io.containerd.runtime.v2.task/moby|runc/moby)|^/run/docker' | sort >"$d/run-paths"
  for s in vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys \
    kernel.keys.root_maxbytes net.ipv4.ip_forward net.ipv4.conf.all.route_localnet net.netfilter.nf_conntrack_max \
    net.netfilter.nf_conntrack_tcp_timeout_established net.netfilter.nf_conntrack_tcp_timeout_close_wait net.bridge.bridge-nf-call-iptables; do
    printf '%s=%s\n' "$s" "$(sysctl -n "$s" 2>/dev/null)"; done >"$d/sysctls"
  find /sys/fs/cgroup -maxdepth 2 -name 'kubepods*' 2>/dev/null | sort >"$d/cgroups"
}

# ---- port-forwards (restarted when their pod goes away) --------------------------------------------------------
PF_PIDS=()
portforward() { # NAME TARGET LOCAL:REMOTE
  ( while :; do k -n "$NS" port-forward --address 127.0.0.1 "$2" "$3" >>"$OUT/pf-$1.log" 2>&1 || true; sleep 1; done ) &
  PF_PIDS+=($!)
}
cleanup_pf() {
  local p
  for p in "${PF_PIDS[@]}"; do pkill -P "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  PF_PIDS=()
}
SIM=http://127.0.0.1:21710
# players: "username credits_earned calls" from the simulator's admin endpoint.
players() { curl -fsS --max-time 3 -H "Authorization: Bearer $TOKEN" "$SIM/admin/stats" | jq -r '.players[] | "\(.username) \(.credits_earned) \(.calls)"'; }
earners() { players 2>/dev/null | awk '$2 > 0' | wc -l; }
calls() { players 2>/dev/null | awk '{s += $3} END {print s + 0}'; }
ZOEA=$CACHE/work/zoea-bin/zoea
zoea() { ZOEA_MEMORY_ADDR=127.0.0.1:21701 ZOEA_COMPOSER_ADDR=127.0.0.1:21702 ZOEA_RUNNER_ADDR=127.0.0.1:21703 \
  ZOEA_BUS_ADDR=127.0.0.1:21704 ZOEA_ADMIN_TOKEN=$TOKEN timeout 20 "$ZOEA" "$@"; }
# states: "name state owner turns credits" per mysis.
states() { zoea list --json | jq -r '.myses[] | "\(.mysis.name) \(.mysis.state // "-") \(.owner // "-") \(.turns // 0) \(.credits // "-")"'; }
errored() { states 2>/dev/null | grep -c ERRORED || true; }
wait_until() { # SECONDS WHAT CMD...
  local limit=$1 what=$2; shift 2
  local end=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < end)) || return 1
    sleep 1
  done
}
earning() { [[ $(earners) -ge 3 ]]; }
calls_above() { [[ $(calls) -gt $1 ]]; }

# watch_play SECONDS FILE: samples total calls and ERRORED myses every second into FILE ("t calls errored").
watch_play() {
  ( local t0=$SECONDS
    while ((SECONDS - t0 < $1)); do echo "$((SECONDS - t0)) $(calls) $(errored)"; sleep 1; done ) >"$2"
}
# longest_pause FILE: the longest stretch (s) during which the total of calls did not grow.
longest_pause() { awk 'NR == 1 {last = $2; lt = $1; next} $2 > last {if ($1 - lt > m) m = $1 - lt; last = $2; lt = $1} END {print m + 0}' "$1"; }
max_errored() { awk '$3 > m {m = $3} END {print m + 0}' "$1"; }

# ====================================================================================================================
snapshot "$OUT/host-before"

begin build
need=()
for p in etcd:etcd-server containerd:containerd runc:runc iptables:iptables conntrack:conntrack debootstrap:debootstrap jq:jq curl:curl openssl:openssl; do
  command -v "${p%%:*}" >/dev/null || need+=("${p#*:}")
done
[[ -x /usr/lib/cni/bridge ]] || need+=(containernetworking-plugins)
if ((${#need[@]})); then say "   apt-get install ${need[*]}"; apt-get install -y -qq "${need[@]}" >"$OUT/apt.log" 2>&1; fi
t=$SECONDS; "$HERE/build-k8s.sh" >"$OUT/build-k8s.log" 2>&1 || die "build-k8s.sh failed: $OUT/build-k8s.log"
say "   kubernetes $(cat "$BIN/.version"): $((SECONDS - t))s ($(tail -1 "$OUT/build-k8s.log"))"
t=$SECONDS; "$HERE/build-images.sh" >"$OUT/build-images.log" 2>&1 || die "build-images.sh failed: $OUT/build-images.log"
say "   images: $((SECONDS - t))s ($(ls "$CACHE"/images/*.tar | wc -l) archives)"
end_phase

begin up
"$HERE/cluster.sh" up 2>&1 | tee "$OUT/up.log" | sed 's/^/   /' | tee -a "$SUMMARY"
k get --raw /version | jq -r '"   server " + .gitVersion' | tee -a "$SUMMARY"
end_phase

begin dry-run
# The namespace must exist for a server-side dry-run of what goes into it.
k create namespace zoea >/dev/null
if k apply --dry-run=server -k deploy/k8s/overlays/prod >"$OUT/prod-dry-run.txt" 2>&1; then
  say "   prod overlay: $(wc -l <"$OUT/prod-dry-run.txt") objects accepted by the API server (dry run)"
else
  miss "prod overlay dry run refused: $(grep -i error "$OUT/prod-dry-run.txt" | head -3)"
fi
# Its external pieces are not in the overlay: CloudNativePG's Cluster needs the operator's CRDs, the NATS chart Helm.
if k apply --dry-run=server -f deploy/k8s/external/cnpg-cluster.yaml >"$OUT/cnpg-dry-run.txt" 2>&1; then
  say "   external/cnpg-cluster.yaml accepted"
else
  say "   external/cnpg-cluster.yaml: refused without CloudNativePG's CRDs, as expected here ($(head -c 160 "$OUT/cnpg-dry-run.txt"))"
fi
k delete namespace zoea --wait=false >/dev/null
end_phase

begin dev
# The StatefulSets' claims: hostPath volumes made here (no storage provisioner on this cluster), owned by the uid each
# image runs as, since hostPath volumes take no fsGroup.
for v in postgres:999 nats:1000; do
  n=${v%%:*} uid=${v#*:}
  mkdir -p "/var/lib/zoea-k8s/pv/$n"; chown "$uid:$uid" "/var/lib/zoea-k8s/pv/$n"
  k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolume
metadata: {name: zoea-dev-$n}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  claimRef: {namespace: $NS, name: data-$n-0}
  hostPath: {path: /var/lib/zoea-k8s/pv/$n, type: Directory}
YAML
done
t=$SECONDS
k apply --dry-run=server -k deploy/k8s/overlays/dev >"$OUT/dev-dry-run.txt" 2>&1 || true
k apply -k deploy/k8s/overlays/dev >"$OUT/dev-apply.txt" 2>&1 || die "apply of the dev overlay failed: $(grep -i error "$OUT/dev-apply.txt" | head -5)"
say "   applied $(wc -l <"$OUT/dev-apply.txt") objects"
for j in memory-migrate nats-provision seed-demo; do
  kn wait --for=condition=complete "job/$j" --timeout=600s >/dev/null || die "Job $j did not complete: $(kn logs "job/$j" --tail 5 2>&1)"
  say "   Job $j complete at $((SECONDS - t))s"
done
for w in $(kn get deploy,statefulset -o name); do
  kn rollout status "$w" --timeout=300s >/dev/null || die "$w not Ready"
done
say "   every Deployment and StatefulSet Ready at $((SECONDS - t))s: $(kn get deploy,sts --no-headers | awk '{printf "%s %s; ", $1, $2}')"
notready=$(kn get pods -o json | jq -r '.items[] | select(.status.phase == "Running") | select([.status.containerStatuses[] | .ready and .started] | all | not) | .metadata.name')
[[ -z $notready ]] || miss "pods running but not ready/started: $notready"
say "   probes: every running container started and ready; restarts: $(kn get pods -o json | jq '[.items[].status.containerStatuses[].restartCount] | add')"
portforward sim svc/spacemolt-sim 21710:7100
portforward memory svc/memory 21701:7001
portforward composer svc/composer 21702:7002
portforward runner svc/runner 21703:7003
portforward bus svc/bus 21704:7004
portforward web svc/web 21720:7200
wait_until 300 "three myses earning" earning || die "three myses did not earn credits within 300s: $(players 2>&1 | head -5)"
say "   three myses earning credits at $((SECONDS - t))s: $(players | tr '\n' ';')"
code=$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:21720/healthz)
say "   web console /healthz over port-forward: HTTP $code; zoea list: $(states | tr '\n' ';')"
if k top pods -n "$NS" >"$OUT/top.txt" 2>&1; then say "   metrics-server: kubectl top pods answers ($(wc -l <"$OUT/top.txt") lines); HPA: $(kn get hpa runner --no-headers | awk '{print $3, $4, $5, $6}')"; else say "   metrics-server: kubectl top pods did not answer ($(head -c 120 "$OUT/top.txt"))"; fi
end_phase

begin scale
# The HPA owns the runner's replica count (base/runner.yaml; dev: 1–2): held off while an operator scales by hand.
kn get hpa runner -o yaml >"$OUT/hpa-runner.yaml"
kn delete hpa runner >/dev/null
c0=$(calls)
for n in 3 1; do
  ts=$SECONDS
  kn scale deploy/runner --replicas=$n >/dev/null
  kn rollout status deploy/runner --timeout=300s >/dev/null || die "runner did not reach $n replicas"
  ready=$((SECONDS - ts))
  # myses spread over the replicas (their leases: owner in zoea list).
  spread() { [[ $(states 2>/dev/null | awk '$3 != "-" {print $3}' | sort -u | wc -l) -ge $(( n < 3 ? n : 3 )) ]]; }
  if wait_until 180 "myses on $n replicas" spread; then
    say "   runner → $n: Ready in ${ready}s, myses on $(states | awk '{print $3}' | sort -u | wc -l) replica(s) after $((SECONDS - ts))s: $(states | awk '{print $1 "@" $3}' | tr '\n' ' ')"
  else
    miss "runner → $n: the myses did not spread over $n replicas within 180s: $(states | tr '\n' ';')"
  fi
  c1=$(calls); wait_until 120 "play after scaling" calls_above "$c1" || miss "no call made within 120s after scaling to $n"
done
say "   calls during scaling: $(( $(calls) - c0 )); ERRORED myses now: $(errored)"
kn apply -f "$OUT/hpa-runner.yaml" >/dev/null 2>&1 || k apply -k deploy/k8s/overlays/dev >/dev/null
end_phase

begin rollout
watch_play 600 "$OUT/rollout-play.txt" & watch=$!
ts=$SECONDS
for d in memory composer bus runner web spacemolt-sim; do
  img=zoea/$d:$TAG2; [[ $d == web ]] && img=zoea/zoea:$TAG2
  kn set image "deploy/$d" "$d=$img" >/dev/null
  kn rollout status "deploy/$d" --timeout=300s >/dev/null || die "rollout of $d to $img did not finish"
  say "   $d → $img rolled at $((SECONDS - ts))s"
done
c1=$(calls); wait_until 120 "play after the rollout" calls_above "$c1" || miss "no call within 120s after the rollout"
sleep 5; kill "$watch" 2>/dev/null || true; wait "$watch" 2>/dev/null || true
say "   rollout of 6 Deployments: $((SECONDS - ts))s; longest pause in play (no call made): $(longest_pause "$OUT/rollout-play.txt")s; ERRORED myses at most $(max_errored "$OUT/rollout-play.txt"); images now: $(kn get deploy -o jsonpath='{range .items[*]}{.spec.template.spec.containers[0].image}{" "}{end}')"
[[ $(max_errored "$OUT/rollout-play.txt") -eq 0 ]] || miss "a mysis was ERRORED during the rollout"
end_phase

begin delete
for sel in memory composer runner bus web spacemolt-sim postgres nats; do
  pod=$(kn get pods -l "app.kubernetes.io/name=$sel" -o jsonpath='{.items[0].metadata.name}')
  uid=$(kn get pod "$pod" -o jsonpath='{.metadata.uid}')
  c1=$(calls); ts=$SECONDS
  kn delete pod "$pod" --wait=false >/dev/null
  # Ready again: a pod other than the deleted one (a StatefulSet's has the same name, not the same uid), ready.
  back() { kn get pods -l "app.kubernetes.io/name=$sel" -o json | jq -e --arg u "$uid" '[.items[] | select(.metadata.uid != $u) | select(.metadata.deletionTimestamp == null) | select((.status.containerStatuses // []) | length > 0 and all(.ready))] | length > 0' >/dev/null; }
  wait_until 240 "$sel back" back || miss "$sel not Ready within 240s after kubectl delete pod"
  rdy=$((SECONDS - ts))
  if wait_until 240 "play after deleting $sel" calls_above "$c1"; then
    say "   delete pod $sel ($pod): Ready again in ${rdy}s, play resumed (a call made) after $((SECONDS - ts))s; ERRORED $(errored)"
  else
    miss "delete pod $sel: no call within 240s"
  fi
  sleep 3
done
end_phase

begin pdb
# web runs 2 replicas for this: with maxUnavailable 1, the first eviction is allowed and the second, while the first's
# replacement is not yet Ready, must be refused (HTTP 429).
kn scale deploy/web --replicas=2 >/dev/null; kn rollout status deploy/web --timeout=180s >/dev/null
wait_until 60 "PDB web sees 2 healthy" bash -c "[[ \$('$KUBECTL' --kubeconfig '$KCFG' -n $NS get pdb web -o jsonpath='{.status.currentHealthy}') == 2 ]]" || true
mapfile -t pods < <(kn get pods -l app.kubernetes.io/name=web -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
evict() { printf '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"%s","namespace":"%s"}}' "$1" "$NS" |
  k create --raw "/api/v1/namespaces/$NS/pods/$1/eviction" -f - 2>&1; }
r1=$(evict "${pods[0]}") && s1=allowed || s1="refused ($r1)"
r2=$(evict "${pods[1]}") && s2=allowed || s2="refused: $(printf '%s' "$r2" | head -c 200)"
say "   eviction 1 of web (${pods[0]}): $s1; eviction 2 (${pods[1]}): $s2"
[[ $s1 == allowed && $s2 == refused* ]] || miss "the PodDisruptionBudget did not refuse the second eviction"
say "   PDBs: $(kn get pdb --no-headers | awk '{printf "%s allowed-disruptions=%s; ", $1, $4}')"
kn scale deploy/web --replicas=1 >/dev/null
end_phase

begin secrets
kn get secret -o json | jq -r '.items[].data // {} | to_entries[] | .value' | while read -r v; do printf '%s' "$v" | base64 -d; echo; done \
  | awk 'length($0) >= 8' | sort -u >"$OUT/secret-values"
for p in $(kn get pods -o name); do kn logs "$p" --all-containers --prefix 2>/dev/null; kn logs "$p" --all-containers --previous 2>/dev/null || true; done >"$OUT/all-logs.txt"
kn describe all >"$OUT/describe.txt" 2>&1; kn describe secret,configmap,pod >>"$OUT/describe.txt" 2>&1
leaks=0
while read -r v; do
  # Each secret value and each password inside a URL.
  for s in "$v" $(printf '%s' "$v" | sed -n 's#^[a-z]*://[^:]*:\([^@]*\)@.*#\1#p'); do
    if grep -qF -- "$s" "$OUT/all-logs.txt" "$OUT/describe.txt"; then leaks=$((leaks + 1)); say "   secret value found: ${s:0:4}… in $(grep -lF -- "$s" "$OUT/all-logs.txt" "$OUT/describe.txt" | xargs -n1 basename | tr '\n' ' ')"; fi
  done
done <"$OUT/secret-values"
say "   $(wc -l <"$OUT/secret-values") secret values, $(wc -l <"$OUT/all-logs.txt") log lines, $(wc -l <"$OUT/describe.txt") lines of describe: $leaks found"
((leaks == 0)) || miss "secret values appear in logs or describe"
end_phase

begin tally
t=$SECONDS
if (cd "$REPO" && go run ./services/runner/tools/cmd/scaleload -tally -memory 127.0.0.1:21701 -prefix mysis-) >"$OUT/tally.txt" 2>&1; then
  sed 's/^/   /' "$OUT/tally.txt" | tee -a "$SUMMARY"
else
  sed 's/^/   /' "$OUT/tally.txt" | tee -a "$SUMMARY"; miss "history tally failed or found turns lost / calls answered twice"
fi
say "   final: $(players | tr '\n' ';') calls total $(calls); ERRORED $(errored)"
end_phase

cleanup_pf
if [[ -n ${ZOEA_K8S_KEEP:-} ]]; then say "cluster left up (ZOEA_K8S_KEEP): $HERE/cluster.sh down to remove it"; exit 0; fi

begin down
"$HERE/cluster.sh" down 2>&1 | tee "$OUT/down.log" | sed 's/^/   /' | tee -a "$SUMMARY"
snapshot "$OUT/host-after"
same=1
for f in processes mounts iptables links bridge-ports routes run-paths sysctls cgroups; do
  if ! diff -u "$OUT/host-before/$f" "$OUT/host-after/$f" >"$OUT/host-diff-$f.txt"; then same=0; miss "host $f differ after teardown: $(grep -E '^[-+][^-+]' "$OUT/host-diff-$f.txt" | head -5 | tr '\n' ' ')"; else rm -f "$OUT/host-diff-$f.txt"; fi
done
((same)) && say "   host as before: processes, mounts, iptables rules, links, routes, /run paths, sysctls, cgroups"
end_phase

say "k8s-check: total $((SECONDS - t_all))s, $failures miss(es); run files in $OUT"
((failures == 0))
