package deploy

import (
	"fmt"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// pod is a pod as NetworkPolicy sees it: its namespace and labels.
type pod struct {
	ns     string
	labels map[string]string
}

// edge is one connection a service makes (from its configuration: ZOEA_*_ADDR, ZOEA_NATS_URL, ZOEA_DATABASE_URL,
// ZOEA_SPACEMOLT_URL).
type edge struct {
	from, to string
	port     int32
}

// TestK8sNetworkPolicies evaluates the overlays' NetworkPolicies as an enforcing CNI would: every connection a
// service needs is allowed (egress of the client and ingress of the server), connections nobody needs are not,
// and every Zoea pod is under a default deny.
func TestK8sNetworkPolicies(t *testing.T) {
	needed := []edge{
		{"composer", "memory", 7001}, {"runner", "memory", 7001}, {"bus", "memory", 7001}, {"web", "memory", 7001},
		{"runner", "composer", 7002}, {"web", "composer", 7002}, {"web", "runner", 7003},
		{"runner", "bus", 7004}, {"web", "bus", 7004},
		{"memory", "postgres", 5432}, {"memory-migrate", "postgres", 5432},
		{"bus", "nats", 4222}, {"runner", "nats", 4222}, {"nats-provision", "nats", 4222},
		{"runner", "kube-dns", 53}, {"memory", "kube-dns", 53}, {"web", "kube-dns", 53},
	}
	refused := []edge{
		{"spacemolt-sim", "memory", 7001}, {"web", "postgres", 5432}, {"composer", "postgres", 5432},
		{"bus", "postgres", 5432}, {"runner", "postgres", 5432}, {"web", "nats", 4222}, {"memory", "nats", 4222},
		{"composer", "nats", 4222}, {"spacemolt-sim", "runner", 7003}, {"memory", "runner", 7003},
		{"nats-provision", "memory", 7001}, {"memory-migrate", "memory", 7001},
	}
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		pods := m.pods()
		needed, refused := needed, refused
		if m.overlay == "overlays/dev" {
			needed = append(needed[:len(needed):len(needed)], edge{"seed-demo", "runner", 7003}, edge{"seed-demo", "bus", 7004}, edge{"runner", "spacemolt-sim", 7100})
			refused = append(refused[:len(refused):len(refused)], edge{"seed-demo", "postgres", 5432})
		}
		for name, p := range pods {
			if p.labels["app.kubernetes.io/part-of"] != "zoea" {
				continue // the cluster DNS, CloudNativePG's and the NATS chart's pods
			}
			if len(m.selecting(p, networkingv1.PolicyTypeIngress)) == 0 {
				t.Errorf("%s: pod %s is under no ingress policy", m.overlay, name)
			}
			if len(m.selecting(p, networkingv1.PolicyTypeEgress)) == 0 {
				t.Errorf("%s: pod %s is under no egress policy", m.overlay, name)
			}
		}
		for _, e := range needed {
			if err := m.allowed(pods, e); err != nil {
				t.Errorf("%s: %s → %s:%d must be allowed: %v", m.overlay, e.from, e.to, e.port, err)
			}
		}
		for _, e := range refused {
			if m.allowed(pods, e) == nil {
				t.Errorf("%s: %s → %s:%d is allowed, and nothing needs it", m.overlay, e.from, e.to, e.port)
			}
		}
	})
}

func (m *manifests) namespace() string {
	for n := range m.namespaces {
		return n
	}
	return ""
}

// pods is every workload's pod, plus the cluster DNS and, in prod, the external data stores' pods.
func (m *manifests) pods() map[string]pod {
	ns := m.namespace()
	out := map[string]pod{"kube-dns": {"kube-system", map[string]string{"k8s-app": "kube-dns"}}}
	for _, w := range m.workloads() {
		out[w.name] = pod{ns, w.pod.Labels}
	}
	if _, ok := out["postgres"]; !ok {
		out["postgres"] = pod{ns, map[string]string{"cnpg.io/cluster": "zoea-pg", "cnpg.io/instanceRole": "primary"}}
	}
	if _, ok := out["nats"]; !ok {
		out["nats"] = pod{"nats", map[string]string{"app.kubernetes.io/name": "nats", "app.kubernetes.io/instance": "nats"}}
	}
	return out
}

func (m *manifests) selecting(p pod, typ networkingv1.PolicyType) []*networkingv1.NetworkPolicy {
	var out []*networkingv1.NetworkPolicy
	for _, np := range m.netpols {
		if np.Namespace != p.ns || !matches(&np.Spec.PodSelector, p.labels) {
			continue
		}
		for _, pt := range np.Spec.PolicyTypes {
			if pt == typ {
				out = append(out, np)
			}
		}
	}
	return out
}

func matches(s *metav1.LabelSelector, l map[string]string) bool {
	sel, err := metav1.LabelSelectorAsSelector(s)
	return err == nil && sel.Matches(labels.Set(l))
}

func peerMatches(peers []networkingv1.NetworkPolicyPeer, self string, p pod) bool {
	if len(peers) == 0 {
		return true
	}
	for _, peer := range peers {
		if peer.IPBlock != nil {
			continue // addresses outside the cluster: no pod here
		}
		nsOK := p.ns == self
		if peer.NamespaceSelector != nil {
			nsOK = matches(peer.NamespaceSelector, map[string]string{"kubernetes.io/metadata.name": p.ns})
		}
		podOK := peer.PodSelector == nil || matches(peer.PodSelector, p.labels)
		if nsOK && podOK {
			return true
		}
	}
	return false
}

func portMatches(ports []networkingv1.NetworkPolicyPort, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Port == nil || p.Port.IntVal == port {
			return true
		}
	}
	return false
}

// allowed says why e is refused, or nil: egress from e.from and ingress to e.to must both admit it (a pod under no
// policy of a type admits everything of that type).
func (m *manifests) allowed(pods map[string]pod, e edge) error {
	from, ok1 := pods[e.from]
	to, ok2 := pods[e.to]
	if !ok1 || !ok2 {
		return fmt.Errorf("no pod %s or %s in this overlay", e.from, e.to)
	}
	if eg := m.selecting(from, networkingv1.PolicyTypeEgress); len(eg) > 0 {
		ok := false
		for _, np := range eg {
			for _, r := range np.Spec.Egress {
				if peerMatches(r.To, np.Namespace, to) && portMatches(r.Ports, e.port) {
					ok = true
				}
			}
		}
		if !ok {
			return fmt.Errorf("no egress rule of %s admits it", e.from)
		}
	}
	if in := m.selecting(to, networkingv1.PolicyTypeIngress); len(in) > 0 {
		ok := false
		for _, np := range in {
			for _, r := range np.Spec.Ingress {
				if peerMatches(r.From, np.Namespace, from) && portMatches(r.Ports, e.port) {
					ok = true
				}
			}
		}
		if !ok {
			return fmt.Errorf("no ingress rule of %s admits it", e.to)
		}
	}
	return nil
}
