#!/usr/bin/env bash
# A single-node Kubernetes for the k8s check, on this machine, on private ranges and ports only:
#   cluster.sh up      etcd, containerd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
#                      kube-proxy; the images of build-images.sh imported; CoreDNS and metrics-server running
#   cluster.sh down    everything stopped and removed: processes, mounts, iptables chains, links, routes, cgroups,
#                      /run and /var/lib paths (the host as before `up`; k8s-check.sh compares)
#   cluster.sh env     prints the KUBECONFIG and kubectl to use
# Layout: binaries and images in $CACHE (build-k8s.sh, build-images.sh; kept between runs), state in $STATE and
# $RUN (removed by down). Network: a bridge with no ports ($BRIDGE, $NODE_IP/24 = the pod range), services in
# $SVC_CIDR routed to the bridge so no cluster address ever leaves by the host's default route, pod traffic to
# anything but the bridge dropped (chain ZOEA-K8S in FORWARD), NodePorts only on $NODE_IP in $NODEPORTS. Ports on the
# host: etcd 127.0.0.1:21379/21380, apiserver $NODE_IP:21443, kubelet $NODE_IP:21250 (healthz 127.0.0.1:21248),
# controller-manager 127.0.0.1:21257, scheduler 127.0.0.1:21259, kube-proxy 127.0.0.1:21256/21249.
# The kubelet would set vm.overcommit_memory, vm.panic_on_oom, kernel.panic, kernel.panic_on_oops and the keys limits
# on the host: it runs in a mount namespace of its own where those /proc/sys files are bound to copies, so it
# writes the copies. kube-proxy is configured to change no sysctl (no conntrack sizing, no route_localnet).
# Needs root, etcd (etcd-server), containerd, runc, containernetworking-plugins, iptables, conntrack, openssl.
set -euo pipefail
CACHE=${ZOEA_K8S_CACHE:-/var/cache/zoea-k8s}
STATE=${ZOEA_K8S_STATE:-/var/lib/zoea-k8s}
RUN=${ZOEA_K8S_RUN:-/run/zoea-k8s}
BIN=$CACHE/k8s/bin
BRIDGE=zk8s0
NODE=zoea-k8s
NODE_IP=10.220.0.1
POD_CIDR=10.220.0.0/24
SVC_CIDR=10.221.0.0/24
SVC_API=10.221.0.1
DNS_IP=10.221.0.10
NODEPORTS=21500-21599
API=https://$NODE_IP:21443
CTR_SOCK=$RUN/containerd/containerd.sock
KUBECONFIG_ADMIN=$STATE/pki/admin.kubeconfig
COREDNS_VERSION=${COREDNS_VERSION:-v1.12.1}
METRICS_SERVER_VERSION=${METRICS_SERVER_VERSION:-v0.8.0}
SYSCTLS=(vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes)

say() { printf 'cluster: %s\n' "$*" >&2; }
die() { printf 'cluster: %s\n' "$*" >&2; exit 1; }
KUBECTL=${KUBECTL:-$BIN/kubectl}
kubectl() { "$KUBECTL" --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }
ctr_() { ctr --address "$CTR_SOCK" -n k8s.io "$@"; }

# start NAME CMD...: runs CMD in its own session, output in $RUN/log/NAME.log, pid in $RUN/pid/NAME.
start() {
  local name=$1; shift
  setsid "$@" >"$RUN/log/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/pid/$name"
}
# wait_for SECONDS WHAT CMD...
wait_for() {
  local limit=$1 what=$2; shift 2
  local end=$(( $(date +%s) + limit ))
  until "$@" >/dev/null 2>&1; do
    [[ $(date +%s) -lt $end ]] || die "$what not ready within ${limit}s (logs: $RUN/log)"
    sleep 1
  done
}

pki() {
  local d=$STATE/pki
  mkdir -p "$d"; cd "$d"
  ca() { openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.crt" -days 2 -subj "/CN=$2" 2>/dev/null; }
  # cert NAME CA SUBJECT [SAN]
  cert() {
    local ext=$d/$1.ext
    printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=%s\n' \
      "${4:+serverAuth,}clientAuth" >"$ext"
    [[ -n ${4:-} ]] && printf 'subjectAltName=%s\n' "$4" >>"$ext"
    openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$3" 2>/dev/null
    openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -days 2 -extfile "$ext" -out "$1.crt" 2>/dev/null
    rm -f "$1.csr" "$ext"
  }
  ca ca zoea-k8s-ca
  ca front-proxy-ca zoea-k8s-front-proxy-ca
  cert apiserver ca "/CN=kube-apiserver" \
    "IP:$NODE_IP,IP:$SVC_API,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert apiserver-kubelet-client ca "/O=system:masters/CN=kube-apiserver-kubelet-client"
  cert front-proxy-client front-proxy-ca "/CN=front-proxy-client"
  cert admin ca "/O=system:masters/CN=zoea-k8s-admin"
  cert controller-manager ca "/CN=system:kube-controller-manager"
  cert scheduler ca "/CN=system:kube-scheduler"
  cert kube-proxy ca "/CN=system:kube-proxy"
  cert kubelet ca "/O=system:nodes/CN=system:node:$NODE"
  cert kubelet-serving ca "/CN=$NODE" "IP:$NODE_IP,DNS:$NODE"
  openssl genrsa -out sa.key 2048 2>/dev/null; openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  for u in admin controller-manager scheduler kube-proxy kubelet; do
    cat >"$u.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: zoea-k8s
  cluster: {server: "$API", certificate-authority: "$d/ca.crt"}
users:
- name: $u
  user: {client-certificate: "$d/$u.crt", client-key: "$d/$u.key"}
contexts:
- name: zoea-k8s
  context: {cluster: zoea-k8s, user: $u}
current-context: zoea-k8s
KC
  done
  chmod 600 ./*.key
  cd - >/dev/null
}

network_up() {
  ip link add "$BRIDGE" type bridge
  ip addr add "$NODE_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  # Service addresses stay on the host: kube-proxy's DNAT rewrites them to pod addresses on the bridge; one without
  # endpoints goes nowhere but the bridge.
  ip route add "$SVC_CIDR" dev "$BRIDGE"
  iptables -N ZOEA-K8S
  iptables -A ZOEA-K8S -i "$BRIDGE" -o "$BRIDGE" -j ACCEPT
  iptables -A ZOEA-K8S -s "$POD_CIDR" ! -o "$BRIDGE" -j DROP
  iptables -A ZOEA-K8S -o "$BRIDGE" -j ACCEPT
  iptables -I FORWARD 1 -j ZOEA-K8S
  mkdir -p "$STATE/cni/net.d" "$STATE/cni/ipam"
  cat >"$STATE/cni/net.d/10-zoea-k8s.conflist" <<CNI
{
  "cniVersion": "1.0.0",
  "name": "zoea-k8s",
  "plugins": [
    {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$STATE/cni/ipam", "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP"}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}, "snat": false}
  ]
}
CNI
}

containerd_up() {
  mkdir -p "$RUN/containerd" "$STATE/containerd"
  cat >"$STATE/containerd.toml" <<TOML
version = 2
root = "$STATE/containerd"
state = "$RUN/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$CTR_SOCK"
[ttrpc]
  address = "$CTR_SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "zoea.local/pause:3.10"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
TOML
  start containerd containerd --config "$STATE/containerd.toml"
  wait_for 60 containerd ctr --address "$CTR_SOCK" version
  local f n=0
  for f in "$CACHE"/images/*.tar; do ctr_ images import "$f" >/dev/null; n=$((n + 1)); done
  say "containerd up, $n images imported"
}

etcd_up() {
  mkdir -p "$STATE/etcd"
  start etcd etcd --name zoea-k8s --data-dir "$STATE/etcd" \
    --listen-client-urls http://127.0.0.1:21379 --advertise-client-urls http://127.0.0.1:21379 \
    --listen-peer-urls http://127.0.0.1:21380 --initial-advertise-peer-urls http://127.0.0.1:21380 \
    --initial-cluster zoea-k8s=http://127.0.0.1:21380 --initial-cluster-state new
  wait_for 60 etcd curl -fsS http://127.0.0.1:21379/health
}

control_plane_up() {
  local p=$STATE/pki
  start kube-apiserver "$BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:21379 \
    --bind-address="$NODE_IP" --advertise-address="$NODE_IP" --secure-port=21443 \
    --service-cluster-ip-range="$SVC_CIDR" --service-node-port-range="$NODEPORTS" \
    --tls-cert-file="$p/apiserver.crt" --tls-private-key-file="$p/apiserver.key" --client-ca-file="$p/ca.crt" \
    --kubelet-client-certificate="$p/apiserver-kubelet-client.crt" --kubelet-client-key="$p/apiserver-kubelet-client.key" \
    --service-account-key-file="$p/sa.pub" --service-account-signing-key-file="$p/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction --profiling=false \
    --requestheader-client-ca-file="$p/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
    --requestheader-extra-headers-prefix=X-Remote-Extra- --requestheader-group-headers=X-Remote-Group \
    --requestheader-username-headers=X-Remote-User \
    --proxy-client-cert-file="$p/front-proxy-client.crt" --proxy-client-key-file="$p/front-proxy-client.key" \
    --enable-aggregator-routing=true
  wait_for 120 kube-apiserver kubectl get --raw /readyz
  start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$p/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$p/controller-manager.kubeconfig" --authorization-kubeconfig="$p/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=21257 --leader-elect=false --use-service-account-credentials=true \
    --service-account-private-key-file="$p/sa.key" --root-ca-file="$p/ca.crt" \
    --cluster-signing-cert-file="$p/ca.crt" --cluster-signing-key-file="$p/ca.key" \
    --allocate-node-cidrs=false --service-cluster-ip-range="$SVC_CIDR" --profiling=false
  start kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$p/scheduler.kubeconfig" \
    --authentication-kubeconfig="$p/scheduler.kubeconfig" --authorization-kubeconfig="$p/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=21259 --leader-elect=false --profiling=false
}

kubelet_up() {
  local p=$STATE/pki k=$STATE/kubelet f
  mkdir -p "$k" "$RUN/sysctl"
  : >"$RUN/resolv.conf"
  cat >"$STATE/kubelet.yaml" <<KCFG
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 21250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 21248
tlsCertFile: $p/kubelet-serving.crt
tlsPrivateKeyFile: $p/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $p/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$CTR_SOCK
clusterDNS: [$DNS_IP]
clusterDomain: cluster.local
resolvConf: $RUN/resolv.conf
failSwapOn: false
failCgroupV1: false
protectKernelDefaults: false
podCIDR: $POD_CIDR
maxPods: 60
serializeImagePulls: false
evictionHard: {memory.available: 200Mi, nodefs.available: 5%, imagefs.available: 5%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
KCFG
  # The kubelet's volumes (secret tmpfs, projected tokens) are mounted in its own namespace: $k is a shared mount so
  # they propagate to the host's, where containerd and runc see them.
  mount --bind "$k" "$k"; mount --make-shared "$k"
  for f in "${SYSCTLS[@]}"; do cat "/proc/sys/$f" >"$RUN/sysctl/${f//\//_}"; done
  cat >"$RUN/kubelet-ns.sh" <<NS
#!/bin/sh
set -e
for f in ${SYSCTLS[*]}; do mount --bind "$RUN/sysctl/\$(echo \$f | tr / _)" "/proc/sys/\$f"; done
exec "$BIN/kubelet" --config="$STATE/kubelet.yaml" --kubeconfig="$p/kubelet.kubeconfig" --root-dir="$k" \
  --hostname-override=$NODE --node-ip=$NODE_IP --cert-dir="$STATE/kubelet-pki"
NS
  chmod +x "$RUN/kubelet-ns.sh"
  start kubelet unshare --mount --propagation unchanged "$RUN/kubelet-ns.sh"
  cat >"$STATE/kube-proxy.yaml" <<KP
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $p/kube-proxy.kubeconfig}
hostnameOverride: $NODE
mode: iptables
bindAddress: $NODE_IP
clusterCIDR: $POD_CIDR
healthzBindAddress: 127.0.0.1:21256
metricsBindAddress: 127.0.0.1:21249
nodePortAddresses: ["$NODE_IP/32"]
iptables: {localhostNodePorts: false}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s, udpTimeout: 0s, udpStreamTimeout: 0s}
KP
  start kube-proxy "$BIN/kube-proxy" --config="$STATE/kube-proxy.yaml"
  wait_for 180 "node $NODE" node_ready
}
node_ready() { kubectl get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' | grep -qx True; }

addons_up() {
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects: [{kind: ServiceAccount, name: coredns, namespace: kube-system}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    .:1053 {
        errors
        health :8080
        ready :8181
        kubernetes cluster.local in-addr.arpa ip6.arpa {
            pods insecure
        }
        cache 30
        loop
        reload
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      serviceAccountName: coredns
      dnsPolicy: Default
      securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: coredns
        image: zoea.local/coredns:$COREDNS_VERSION
        imagePullPolicy: Never
        args: ["-conf", "/etc/coredns/Corefile"]
        ports: [{containerPort: 1053, protocol: UDP, name: dns}, {containerPort: 1053, protocol: TCP, name: dns-tcp}]
        readinessProbe: {httpGet: {path: /ready, port: 8181}, periodSeconds: 2}
        livenessProbe: {httpGet: {path: /health, port: 8080}, periodSeconds: 10}
        resources: {requests: {cpu: 50m, memory: 32Mi}, limits: {memory: 128Mi}}
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
        volumeMounts: [{name: config, mountPath: /etc/coredns, readOnly: true}]
      volumes: [{name: config, configMap: {name: coredns}}]
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: $DNS_IP
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns, port: 53, targetPort: 1053, protocol: UDP}
  - {name: dns-tcp, port: 53, targetPort: 1053, protocol: TCP}
YAML
  if [[ -f $CACHE/images/zoea.local_metrics-server_$METRICS_SERVER_VERSION.tar ]]; then metrics_server_up; fi
  kubectl -n kube-system rollout status deploy/coredns --timeout=180s >/dev/null
  say "CoreDNS ready"
}

metrics_server_up() {
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ServiceAccount
metadata: {name: metrics-server, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:metrics-server"}
rules:
- apiGroups: [""]
  resources: [nodes/metrics]
  verbs: [get]
- apiGroups: [""]
  resources: [pods, nodes]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:metrics-server"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:metrics-server"}
subjects: [{kind: ServiceAccount, name: metrics-server, namespace: kube-system}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "metrics-server:system:auth-delegator"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:auth-delegator"}
subjects: [{kind: ServiceAccount, name: metrics-server, namespace: kube-system}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: "metrics-server-auth-reader", namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects: [{kind: ServiceAccount, name: metrics-server, namespace: kube-system}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: metrics-server, namespace: kube-system, labels: {k8s-app: metrics-server}}
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: metrics-server}}
  template:
    metadata: {labels: {k8s-app: metrics-server}}
    spec:
      serviceAccountName: metrics-server
      securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: metrics-server
        image: zoea.local/metrics-server:$METRICS_SERVER_VERSION
        imagePullPolicy: Never
        args: ["--secure-port=10250", "--cert-dir=/tmp", "--kubelet-insecure-tls", "--kubelet-preferred-address-types=InternalIP",
               "--kubelet-use-node-status-port", "--metric-resolution=15s"]
        ports: [{containerPort: 10250, name: https}]
        readinessProbe: {httpGet: {path: /readyz, port: https, scheme: HTTPS}, periodSeconds: 5}
        resources: {requests: {cpu: 50m, memory: 64Mi}, limits: {memory: 256Mi}}
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
        volumeMounts: [{name: tmp, mountPath: /tmp}]
      volumes: [{name: tmp, emptyDir: {}}]
---
apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: kube-system}
spec:
  selector: {k8s-app: metrics-server}
  ports: [{name: https, port: 443, targetPort: https}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  service: {name: metrics-server, namespace: kube-system}
  group: metrics.k8s.io
  version: v1beta1
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 100
  versionPriority: 100
YAML
}

up() {
  [[ $(id -u) -eq 0 ]] || die "run as root"
  [[ ! -e $RUN ]] || die "$RUN exists: a cluster is up (or was not torn down): cluster.sh down first"
  for c in etcd containerd runc iptables conntrack openssl /usr/lib/cni/bridge; do
    command -v "$c" >/dev/null || [[ -x $c ]] || die "$c missing: apt-get install etcd-server containerd runc iptables conntrack containernetworking-plugins openssl"
  done
  mkdir -p "$RUN/log" "$RUN/pid" "$STATE"
  local t0=$SECONDS
  pki; network_up; etcd_up; containerd_up; control_plane_up; kubelet_up
  say "node $NODE Ready at $((SECONDS - t0))s"
  addons_up
  say "cluster up in $((SECONDS - t0))s (KUBECONFIG=$KUBECONFIG_ADMIN)"
}

# stop NAME [SIGNAL]: TERM (or SIGNAL), then KILL after 20 s.
stop() {
  local f=$RUN/pid/$1 pid i
  [[ -f $f ]] || return 0
  pid=$(cat "$f")
  kill -"${2:-TERM}" -- "-$pid" 2>/dev/null || kill -"${2:-TERM}" "$pid" 2>/dev/null || true
  for i in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$f"
}

down() {
  [[ $(id -u) -eq 0 ]] || die "run as root"
  local t0=$SECONDS c
  if [[ -f $RUN/pid/kube-apiserver ]] && kubectl get --raw /readyz >/dev/null 2>&1; then
    # Every pod deleted through the API, so the kubelet unmounts its volumes and CNI releases its address.
    for ns in $(kubectl get ns -o name | sed 's#namespace/##' | grep -vxE 'default|kube-system|kube-public|kube-node-lease'); do
      kubectl delete ns "$ns" --wait=false >/dev/null 2>&1 || true
    done
    kubectl -n kube-system delete deploy --all --wait=false >/dev/null 2>&1 || true
    local end=$((SECONDS + 120))
    while (( SECONDS < end )) && [[ -n $(kubectl get pods -A -o name 2>/dev/null) ]]; do sleep 1; done
  fi
  stop kube-proxy; stop kubelet; stop kube-scheduler; stop kube-controller-manager; stop kube-apiserver; stop etcd
  [[ -x $BIN/kube-proxy ]] && "$BIN/kube-proxy" --cleanup >/dev/null 2>&1 || true
  if [[ -S $CTR_SOCK ]]; then
    for c in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$c" >/dev/null 2>&1 || true; done
    sleep 1
    for c in $(ctr_ containers ls -q 2>/dev/null); do ctr_ tasks rm -f "$c" >/dev/null 2>&1 || true; ctr_ containers rm "$c" >/dev/null 2>&1 || true; done
  fi
  stop containerd
  # Leftovers of pods the API did not delete: their network namespaces and veths, their mounts.
  for c in /var/run/netns/cni-*; do [[ -e $c ]] && { umount "$c" 2>/dev/null || true; rm -f "$c"; }; done
  rmdir /var/run/netns 2>/dev/null || true
  while read -r c; do umount -l "$c" 2>/dev/null || true; done < <(awk -v s="$STATE" -v r="$RUN" '$5 ~ "^"s || $5 ~ "^"r {print $5}' /proc/self/mountinfo | sort -r)
  ip link del "$BRIDGE" 2>/dev/null || true
  ip route del "$SVC_CIDR" 2>/dev/null || true
  iptables_cleanup
  cgroups_cleanup
  rm -rf /var/lib/cni/results/zoea-k8s-* 2>/dev/null || true
  [[ -d /var/lib/cni/results ]] && rmdir /var/lib/cni/results /var/lib/cni 2>/dev/null || true
  rm -rf /run/containerd/runc/k8s.io /run/containerd/io.containerd.runtime.v2.task/k8s.io 2>/dev/null || true
  # The shims' and runc's directories, when nothing else (another containerd) uses them.
  rmdir /run/containerd/s /run/containerd/runc /run/containerd/io.containerd.runtime.v2.task /run/containerd 2>/dev/null || true
  rm -rf "$RUN" "$STATE"
  say "down in $((SECONDS - t0))s"
}

# Every chain this cluster made (kube-proxy's and the kubelet's KUBE-*, CNI's CNI-*, ours) and every jump to them.
iptables_cleanup() {
  local t chain rule
  for t in filter nat mangle raw; do
    while read -r rule; do
      eval "iptables -t $t ${rule/-A /-D }" 2>/dev/null || true
    done < <(iptables -t "$t" -S 2>/dev/null | grep -E '^-A ' | grep -E -- '-j (KUBE-|CNI-|ZOEA-K8S)' | grep -vE '^-A (KUBE-|CNI-|ZOEA-K8S)')
    for chain in $(iptables -t "$t" -S 2>/dev/null | awk '/^-N (KUBE-|CNI-|ZOEA-K8S)/ {print $2}'); do iptables -t "$t" -F "$chain" 2>/dev/null || true; done
    for chain in $(iptables -t "$t" -S 2>/dev/null | awk '/^-N (KUBE-|CNI-|ZOEA-K8S)/ {print $2}'); do iptables -t "$t" -X "$chain" 2>/dev/null || true; done
  done
  for t in filter nat mangle; do
    for chain in $(ip6tables -t "$t" -S 2>/dev/null | awk '/^-N (KUBE-|CNI-)/ {print $2}'); do ip6tables -t "$t" -F "$chain" 2>/dev/null || true; done
    while read -r rule; do eval "ip6tables -t $t ${rule/-A /-D }" 2>/dev/null || true
    done < <(ip6tables -t "$t" -S 2>/dev/null | grep -E '^-A ' | grep -E -- '-j (KUBE-|CNI-)' | grep -vE '^-A (KUBE-|CNI-)')
    for chain in $(ip6tables -t "$t" -S 2>/dev/null | awk '/^-N (KUBE-|CNI-)/ {print $2}'); do ip6tables -t "$t" -X "$chain" 2>/dev/null || true; done
  done
}

# The kubelet's cgroups (kubepods, with the cgroupfs driver) in every v1 hierarchy, deepest first.
cgroups_cleanup() {
  local d
  for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/*/kubepods.slice; do
    [[ -d $d ]] || continue
    find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
}

case ${1:-} in
  up) up ;;
  down) down ;;
  env) printf 'export KUBECONFIG=%s\nalias kubectl=%s/kubectl\n' "$KUBECONFIG_ADMIN" "$BIN" ;;
  *) die "usage: cluster.sh up|down|env" ;;
esac
