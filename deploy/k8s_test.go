package deploy

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// manifests is one kustomize build, decoded into the Kubernetes API types.
type manifests struct {
	overlay      string
	deployments  map[string]*appsv1.Deployment
	statefulSets map[string]*appsv1.StatefulSet
	jobs         map[string]*batchv1.Job
	services     map[string]*corev1.Service
	configMaps   map[string]*corev1.ConfigMap
	secrets      map[string]*corev1.Secret
	namespaces   map[string]*corev1.Namespace
	hpas         map[string]*autoscalingv2.HorizontalPodAutoscaler
	pdbs         map[string]*policyv1.PodDisruptionBudget
	netpols      map[string]*networkingv1.NetworkPolicy
	objects      []metav1.Object
}

// strictDecoder decodes YAML into the registered API types and rejects unknown or duplicated fields, so a typo
// such as `readinesProbe` or a field at the wrong level fails the test instead of being dropped by the API server.
func strictDecoder(t *testing.T) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, autoscalingv2.AddToScheme, policyv1.AddToScheme,
		networkingv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{Yaml: true, Strict: true})
}

// built caches successful builds: many tests read the same overlay and none modifies it.
var built sync.Map // overlay -> *manifests

func buildOverlay(t *testing.T, overlay string) *manifests {
	t.Helper()
	if m, ok := built.Load(overlay); ok {
		return m.(*manifests)
	}
	dir := filepath.Join(repoRoot(t), "deploy", "k8s", filepath.FromSlash(overlay))
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", overlay, err)
	}
	m := &manifests{
		overlay:      overlay,
		deployments:  map[string]*appsv1.Deployment{},
		statefulSets: map[string]*appsv1.StatefulSet{},
		jobs:         map[string]*batchv1.Job{},
		services:     map[string]*corev1.Service{},
		configMaps:   map[string]*corev1.ConfigMap{},
		secrets:      map[string]*corev1.Secret{},
		namespaces:   map[string]*corev1.Namespace{},
		hpas:         map[string]*autoscalingv2.HorizontalPodAutoscaler{},
		pdbs:         map[string]*policyv1.PodDisruptionBudget{},
		netpols:      map[string]*networkingv1.NetworkPolicy{},
	}
	dec := strictDecoder(t)
	for _, res := range resMap.Resources() {
		y, err := res.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		obj, gvk, err := dec.Decode(y, nil, nil)
		if err != nil {
			t.Fatalf("%s: %s %s does not decode strictly into the Kubernetes API types: %v\n%s", overlay, res.GetKind(), res.GetName(), err, y)
		}
		mo, ok := obj.(metav1.Object)
		if !ok {
			t.Fatalf("%s: %s is not an object", overlay, gvk)
		}
		m.objects = append(m.objects, mo)
		switch o := obj.(type) {
		case *appsv1.Deployment:
			m.deployments[o.Name] = o
		case *appsv1.StatefulSet:
			m.statefulSets[o.Name] = o
		case *batchv1.Job:
			m.jobs[o.Name] = o
		case *corev1.Service:
			m.services[o.Name] = o
		case *corev1.ConfigMap:
			m.configMaps[o.Name] = o
		case *corev1.Secret:
			m.secrets[o.Name] = o
		case *corev1.Namespace:
			m.namespaces[o.Name] = o
		case *autoscalingv2.HorizontalPodAutoscaler:
			m.hpas[o.Name] = o
		case *policyv1.PodDisruptionBudget:
			m.pdbs[o.Name] = o
		case *networkingv1.NetworkPolicy:
			m.netpols[o.Name] = o
		default:
			t.Fatalf("%s: unexpected kind %s %s: teach the test about it", overlay, gvk, mo.GetName())
		}
	}
	built.Store(overlay, m)
	return m
}

// workload is a pod template with its owner, for checks that apply to Deployments, StatefulSets and Jobs alike.
type workload struct {
	kind, name string
	pod        *corev1.PodTemplateSpec
}

func (m *manifests) workloads() []workload {
	var out []workload
	for n, d := range m.deployments {
		out = append(out, workload{"Deployment", n, &d.Spec.Template})
	}
	for n, s := range m.statefulSets {
		out = append(out, workload{"StatefulSet", n, &s.Spec.Template})
	}
	for n, j := range m.jobs {
		out = append(out, workload{"Job", n, &j.Spec.Template})
	}
	slices.SortFunc(out, func(a, b workload) int { return strings.Compare(a.kind+a.name, b.kind+b.name) })
	return out
}

var overlays = []string{"overlays/dev", "overlays/prod"}

func forEachOverlay(t *testing.T, f func(t *testing.T, m *manifests)) {
	for _, o := range overlays {
		t.Run(strings.TrimPrefix(o, "overlays/"), func(t *testing.T) { f(t, buildOverlay(t, o)) })
	}
}

// The base alone must build too (it is what both overlays start from).
func TestKustomizeBaseBuilds(t *testing.T) {
	m := buildOverlay(t, "base")
	if len(m.namespaces) != 0 || slices.ContainsFunc(m.objects, func(o metav1.Object) bool { return o.GetNamespace() != "" }) {
		t.Error("the base must be namespace-less; overlays choose the namespace")
	}
	if len(m.secrets) != 0 {
		t.Error("the base must not carry credentials; overlays decide where zoea-secrets comes from")
	}
}

func TestK8sContainersHardenedAndSized(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		for _, w := range m.workloads() {
			spec := &w.pod.Spec
			where := w.kind + "/" + w.name
			if len(spec.Containers) == 0 {
				t.Errorf("%s has no containers", where)
			}
			if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
				t.Errorf("%s mounts a service account token; none of our pods talks to the API server", where)
			}
			if spec.HostNetwork || spec.HostPID || spec.HostIPC {
				t.Errorf("%s shares a host namespace", where)
			}
			for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
				where := where + " container " + c.Name
				checkContainerSecurity(t, where, spec.SecurityContext, c.SecurityContext)
				checkResources(t, where, c.Resources)
				if strings.HasSuffix(c.Image, ":latest") || (!strings.Contains(c.Image, ":") && !strings.Contains(c.Image, "@")) {
					t.Errorf("%s: image %q is not pinned to a tag", where, c.Image)
				}
			}
		}
	})
}

func checkContainerSecurity(t *testing.T, where string, pod *corev1.PodSecurityContext, c *corev1.SecurityContext) {
	t.Helper()
	if c == nil {
		t.Errorf("%s: no securityContext", where)
		return
	}
	if c.AllowPrivilegeEscalation == nil || *c.AllowPrivilegeEscalation {
		t.Errorf("%s: allowPrivilegeEscalation must be false", where)
	}
	if c.Privileged != nil && *c.Privileged {
		t.Errorf("%s: privileged", where)
	}
	if c.ReadOnlyRootFilesystem == nil || !*c.ReadOnlyRootFilesystem {
		t.Errorf("%s: readOnlyRootFilesystem must be true", where)
	}
	if c.Capabilities == nil || !slices.Contains(c.Capabilities.Drop, "ALL") {
		t.Errorf("%s: capabilities must drop ALL", where)
	} else if len(c.Capabilities.Add) > 0 {
		t.Errorf("%s: adds capabilities %v", where, c.Capabilities.Add)
	}
	// runAsNonRoot and seccomp may come from the pod; the container's own setting wins.
	nonRoot := pod != nil && pod.RunAsNonRoot != nil && *pod.RunAsNonRoot
	if c.RunAsNonRoot != nil {
		nonRoot = *c.RunAsNonRoot
	}
	if !nonRoot {
		t.Errorf("%s: runAsNonRoot is not true", where)
	}
	uid := (*int64)(nil)
	if pod != nil {
		uid = pod.RunAsUser
	}
	if c.RunAsUser != nil {
		uid = c.RunAsUser
	}
	if uid == nil || *uid == 0 {
		t.Errorf("%s: runAsUser must be a non-zero uid (images may name their user, which runAsNonRoot cannot verify)", where)
	}
	var seccomp *corev1.SeccompProfile
	if pod != nil {
		seccomp = pod.SeccompProfile
	}
	if c.SeccompProfile != nil {
		seccomp = c.SeccompProfile
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: seccompProfile must be RuntimeDefault", where)
	}
}

func checkResources(t *testing.T, where string, r corev1.ResourceRequirements) {
	t.Helper()
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, hasReq := r.Requests[name]
		lim, hasLim := r.Limits[name]
		if !hasReq || req.IsZero() {
			t.Errorf("%s: no %s request", where, name)
		}
		if !hasLim || lim.IsZero() {
			t.Errorf("%s: no %s limit", where, name)
		}
		if hasReq && hasLim && lim.Cmp(req) < 0 {
			t.Errorf("%s: %s limit %s is below the request %s", where, name, lim.String(), req.String())
		}
	}
}

// Every Zoea server probes itself the way docs/DEPLOY.md says: native gRPC health on its port (HTTP /healthz for the
// simulator), with startup, readiness and liveness probes; every other container has all three probes too.
func TestK8sProbes(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		for name, d := range m.deployments {
			z, ok := zoeaServiceByName(name)
			listenVar := "ZOEA_LISTEN_ADDR"
			if name == webConsole.name {
				z, ok, listenVar = webConsole, true, "ZOEA_WEB_LISTEN"
			}
			if !ok {
				t.Errorf("Deployment %s is not a Zoea service", name)
				continue
			}
			if len(d.Spec.Template.Spec.Containers) != 1 {
				t.Errorf("Deployment %s: want exactly one container", name)
				continue
			}
			c := d.Spec.Template.Spec.Containers[0]
			probes := map[string]*corev1.Probe{"startupProbe": c.StartupProbe, "readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe}
			for kind, p := range probes {
				where := fmt.Sprintf("Deployment %s %s", name, kind)
				if p == nil {
					t.Errorf("%s: missing", where)
					continue
				}
				if z.grpc {
					if p.GRPC == nil || p.GRPC.Port != int32(z.port) {
						t.Errorf("%s: want a gRPC probe on port %d, got %+v", where, z.port, p.ProbeHandler)
					}
					// Readiness and startup follow the overall service "" (NOT_SERVING while a dependency is down);
					// liveness asks for "liveness", which stays SERVING while the process runs, so an outage of
					// Postgres or NATS takes pods out of rotation without restarting them.
					want := ""
					if kind == "livenessProbe" {
						want = "liveness"
					}
					got := ""
					if p.GRPC != nil && p.GRPC.Service != nil {
						got = *p.GRPC.Service
					}
					if p.GRPC != nil && got != want {
						t.Errorf("%s: probes health service %q, want %q", where, got, want)
					}
				} else {
					if p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || !portIs(c, p.HTTPGet.Port, z.port) {
						t.Errorf("%s: want HTTP GET /healthz on port %d, got %+v", where, z.port, p.ProbeHandler)
					}
				}
			}
			if c.LivenessProbe != nil && c.LivenessProbe.FailureThreshold*c.LivenessProbe.PeriodSeconds < 30 {
				t.Errorf("Deployment %s: liveness gives up after %ds; a short dependency outage would restart every pod", name, c.LivenessProbe.FailureThreshold*c.LivenessProbe.PeriodSeconds)
			}
			wantPortName := "grpc"
			if !z.grpc {
				wantPortName = "http"
			}
			if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.ContainerPort == int32(z.port) && p.Name == wantPortName }) {
				t.Errorf("Deployment %s: no container port %s/%d", name, wantPortName, z.port)
			}
			if got := containerEnv(c, listenVar); got != fmt.Sprintf(":%d", z.port) {
				t.Errorf("Deployment %s: %s=%q, want :%d", name, listenVar, got, z.port)
			}
		}
		for name, s := range m.statefulSets {
			for _, c := range s.Spec.Template.Spec.Containers {
				if c.StartupProbe == nil || c.ReadinessProbe == nil || c.LivenessProbe == nil {
					t.Errorf("StatefulSet %s container %s: want startup, readiness and liveness probes", name, c.Name)
				}
			}
		}
	})
}

func portIs(c corev1.Container, p intstr.IntOrString, want int) bool {
	if p.Type == intstr.Int {
		return p.IntVal == int32(want)
	}
	return slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.StrVal && cp.ContainerPort == int32(want) })
}

func containerEnv(c corev1.Container, key string) string {
	for _, e := range c.Env {
		if e.Name == key {
			return e.Value
		}
	}
	return ""
}

func containerEnvVar(c corev1.Container, key string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == key {
			return &c.Env[i]
		}
	}
	return nil
}

// Settings reach every Zoea container through envFrom: the shared ConfigMap and the Secret.
func TestK8sConfigAndSecrets(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		var cm *corev1.ConfigMap
		for name, c := range m.configMaps {
			if strings.HasPrefix(name, "zoea-config") {
				cm = c
			}
		}
		if cm == nil {
			t.Fatal("no zoea-config ConfigMap")
		}
		for _, w := range m.workloads() {
			if w.kind == "StatefulSet" {
				continue
			}
			for _, c := range w.pod.Spec.Containers {
				var cmRef, secretRef string
				for _, ef := range c.EnvFrom {
					if ef.ConfigMapRef != nil {
						cmRef = ef.ConfigMapRef.Name
					}
					if ef.SecretRef != nil {
						secretRef = ef.SecretRef.Name
					}
				}
				if cmRef != cm.Name {
					t.Errorf("%s/%s: envFrom ConfigMap %q, want %q", w.kind, w.name, cmRef, cm.Name)
				}
				if _, ok := noSharedSecrets[w.name]; ok {
					if secretRef != "" {
						t.Errorf("%s/%s: envFrom Secret %q, which it does not use (%s)", w.kind, w.name, secretRef, noSharedSecrets[w.name])
					}
				} else if !strings.HasPrefix(secretRef, "zoea-secrets") {
					t.Errorf("%s/%s: envFrom Secret %q, want zoea-secrets", w.kind, w.name, secretRef)
				} else if m.overlay == "overlays/dev" && m.secrets[secretRef] == nil {
					t.Errorf("%s/%s: Secret %s is not in the dev build", w.kind, w.name, secretRef)
				}
			}
		}
		// Addresses name Services that expose those ports.
		for _, k := range []string{"ZOEA_MEMORY_ADDR", "ZOEA_COMPOSER_ADDR", "ZOEA_RUNNER_ADDR", "ZOEA_BUS_ADDR"} {
			host, port, err := net.SplitHostPort(cm.Data[k])
			if err != nil {
				t.Errorf("%s=%q: %v", k, cm.Data[k], err)
				continue
			}
			checkServicePort(t, m, k, host, port)
		}
		for _, k := range []string{"ZOEA_LISTEN_ADDR", "ZOEA_ADMIN_TOKEN", "ZOEA_SECRET_KEY", "ZOEA_DATABASE_URL"} {
			if _, ok := cm.Data[k]; ok {
				t.Errorf("ConfigMap holds %s: it is per-container or secret", k)
			}
		}
		if cm.Data["ZOEA_SPACEMOLT_URL"] == "" {
			t.Error("ConfigMap lacks ZOEA_SPACEMOLT_URL")
		}
		// NATS URLs carry credentials, so each service's comes from Secret zoea-nats, never the shared ConfigMap.
		if v, ok := cm.Data["ZOEA_NATS_URL"]; ok {
			t.Errorf("ConfigMap holds ZOEA_NATS_URL=%q: it carries per-service credentials and belongs in Secret zoea-nats", v)
		}
	})
}

func checkServicePort(t *testing.T, m *manifests, what, host, port string) {
	t.Helper()
	svc, ok := m.services[host]
	if !ok {
		t.Errorf("%s points at %s:%s, but there is no Service %s", what, host, port, host)
		return
	}
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return fmt.Sprint(p.Port) == port }) {
		t.Errorf("%s points at %s:%s, but Service %s has no port %s", what, host, port, host, port)
	}
}

// Services select exactly one workload's pods (never the migration Job's), and their target ports exist there.
func TestK8sServicesSelectTheirPods(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		for name, svc := range m.services {
			if len(svc.Spec.Selector) == 0 {
				t.Errorf("Service %s has no selector", name)
				continue
			}
			sel := labels.SelectorFromSet(svc.Spec.Selector)
			var matched []workload
			for _, w := range m.workloads() {
				if sel.Matches(labels.Set(w.pod.Labels)) {
					matched = append(matched, w)
				}
			}
			if len(matched) != 1 || matched[0].kind == "Job" {
				var names []string
				for _, w := range matched {
					names = append(names, w.kind+"/"+w.name)
				}
				t.Errorf("Service %s selects %v, want exactly one Deployment or StatefulSet", name, names)
				continue
			}
			for _, p := range svc.Spec.Ports {
				found := slices.ContainsFunc(matched[0].pod.Spec.Containers, func(c corev1.Container) bool {
					return slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool {
						if p.TargetPort.Type == intstr.String {
							return cp.Name == p.TargetPort.StrVal
						}
						return cp.ContainerPort == p.TargetPort.IntVal
					})
				})
				if !found {
					t.Errorf("Service %s port %s targets %s, which %s/%s does not expose", name, p.Name, p.TargetPort.String(), matched[0].kind, matched[0].name)
				}
			}
		}
		for name, d := range m.deployments {
			if _, ok := m.services[name]; !ok {
				t.Errorf("Deployment %s has no Service of the same name", name)
			}
			sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
			if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				t.Errorf("Deployment %s: selector does not match its own pod template", name)
			}
		}
		for name, s := range m.statefulSets {
			if svc, ok := m.services[s.Spec.ServiceName]; !ok || svc.Spec.ClusterIP != corev1.ClusterIPNone {
				t.Errorf("StatefulSet %s: governing Service %q must exist and be headless", name, s.Spec.ServiceName)
			}
		}
	})
}

func TestK8sLabels(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		for _, o := range m.objects {
			l := o.GetLabels()
			for _, k := range []string{"app.kubernetes.io/part-of", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance"} {
				if l[k] == "" {
					t.Errorf("%T %s lacks label %s", o, o.GetName(), k)
				}
			}
		}
		for _, w := range m.workloads() {
			for _, k := range []string{"app.kubernetes.io/name", "app.kubernetes.io/component", "app.kubernetes.io/part-of", "app.kubernetes.io/instance"} {
				if w.pod.Labels[k] == "" {
					t.Errorf("%s/%s pod template lacks label %s", w.kind, w.name, k)
				}
			}
		}
	})
}

// The runner scales horizontally: an autoscaling/v2 CPU HPA owns its replica count, a PDB limits voluntary
// disruption; every other scaled-out Zoea server has a PDB too.
func TestK8sRunnerScaling(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		runner := m.deployments["runner"]
		if runner == nil {
			t.Fatal("no runner Deployment")
		}
		if runner.Spec.Replicas != nil {
			t.Errorf("runner Deployment sets replicas=%d; the HPA owns the count (a re-apply would fight it)", *runner.Spec.Replicas)
		}
		hpa := m.hpas["runner"]
		if hpa == nil {
			t.Fatal("no runner HorizontalPodAutoscaler")
		}
		ref := hpa.Spec.ScaleTargetRef
		if ref.Kind != "Deployment" || ref.Name != "runner" || ref.APIVersion != "apps/v1" {
			t.Errorf("runner HPA targets %+v", ref)
		}
		if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 1 || hpa.Spec.MaxReplicas < *hpa.Spec.MinReplicas {
			t.Errorf("runner HPA min/max replicas %v/%d", hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
		}
		cpu := slices.ContainsFunc(hpa.Spec.Metrics, func(ms autoscalingv2.MetricSpec) bool {
			return ms.Type == autoscalingv2.ResourceMetricSourceType && ms.Resource != nil && ms.Resource.Name == corev1.ResourceCPU &&
				ms.Resource.Target.Type == autoscalingv2.UtilizationMetricType && ms.Resource.Target.AverageUtilization != nil
		})
		if !cpu {
			t.Error("runner HPA does not scale on CPU utilisation")
		}
		if _, ok := runner.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; !ok {
			t.Error("runner has no CPU request: CPU utilisation is undefined without one")
		}
		for _, name := range []string{"runner", "memory", "composer", "bus"} {
			pdb := m.pdbs[name]
			if pdb == nil {
				t.Errorf("no PodDisruptionBudget for %s", name)
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if err != nil || !sel.Matches(labels.Set(m.deployments[name].Spec.Template.Labels)) {
				t.Errorf("PDB %s does not select the %s pods", name, name)
			}
			if pdb.Spec.MaxUnavailable == nil {
				t.Errorf("PDB %s: use maxUnavailable, which never blocks drains at one replica", name)
			}
		}
	})
}

// noSharedSecrets are the workloads that get none of zoea-secrets, and why.
var noSharedSecrets = map[string]string{
	"nats-provision": "it needs only its NATS URLs, from Secret zoea-nats; no admin token or secret key",
}

// The NATS provisioning Job runs `zoea nats provision` from the CLI image with the bus's and the runners' settings
// (zoea-config) and the provisioning users' URLs from Secret zoea-nats, and is retried while NATS starts.
func TestK8sNATSProvisionJob(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		job := m.jobs["nats-provision"]
		if job == nil {
			t.Fatal("no nats-provision Job")
		}
		c := job.Spec.Template.Spec.Containers[0]
		if web := m.deployments[webConsole.name].Spec.Template.Spec.Containers[0]; c.Image != web.Image {
			t.Errorf("nats-provision Job image %s, the CLI's (web) %s: they must match", c.Image, web.Image)
		}
		if !slices.Equal(c.Args, []string{"nats", "provision"}) || len(c.Command) != 0 {
			t.Errorf("nats-provision Job runs command %v args %v, want the image entrypoint with [nats provision]", c.Command, c.Args)
		}
		if rp := job.Spec.Template.Spec.RestartPolicy; rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever {
			t.Errorf("nats-provision Job restartPolicy %s", rp)
		}
		if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit < 3 {
			t.Error("nats-provision Job needs retries: NATS may still be starting")
		}
		for key, env := range map[string]string{"provision-bus-url": "ZOEA_NATS_PROVISION_BUS_URL", "provision-runner-url": "ZOEA_NATS_PROVISION_RUNNER_URL"} {
			e := containerEnvVar(c, env)
			if e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || !strings.HasPrefix(e.ValueFrom.SecretKeyRef.Name, "zoea-nats") || e.ValueFrom.SecretKeyRef.Key != key {
				t.Errorf("nats-provision %s must come from Secret zoea-nats key %s, got %+v", env, key, e)
			}
		}
		// The same settings as the services it provisions for (ZOEA_SWARM, ZOEA_NATS_REPLICAS, ZOEA_LEASE_TTL).
		for _, svc := range []string{"bus", "runner"} {
			if fmt.Sprint(c.EnvFrom) != fmt.Sprint(m.deployments[svc].Spec.Template.Spec.Containers[0].EnvFrom[:1]) {
				t.Errorf("nats-provision envFrom %v, %s's settings come from %v", c.EnvFrom, svc, m.deployments[svc].Spec.Template.Spec.Containers[0].EnvFrom)
			}
		}
	})
}

func TestK8sMigrateJob(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		job := m.jobs["memory-migrate"]
		if job == nil {
			t.Fatal("no memory-migrate Job")
		}
		c := job.Spec.Template.Spec.Containers[0]
		if mem := m.deployments["memory"].Spec.Template.Spec.Containers[0]; c.Image != mem.Image {
			t.Errorf("migrate Job image %s, memory image %s: they must match", c.Image, mem.Image)
		}
		if !slices.Equal(c.Args, []string{"migrate"}) || len(c.Command) != 0 {
			t.Errorf("migrate Job runs command %v args %v, want the image entrypoint with [migrate]", c.Command, c.Args)
		}
		if rp := job.Spec.Template.Spec.RestartPolicy; rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever {
			t.Errorf("migrate Job restartPolicy %s", rp)
		}
		if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit < 3 {
			t.Error("migrate Job needs retries: Postgres may still be starting")
		}
		// Whatever gives memory its database gives the Job the same one.
		memDB := containerEnvVar(m.deployments["memory"].Spec.Template.Spec.Containers[0], "ZOEA_DATABASE_URL")
		jobDB := containerEnvVar(c, "ZOEA_DATABASE_URL")
		if fmt.Sprint(memDB) != fmt.Sprint(jobDB) {
			t.Errorf("memory and the migrate Job get ZOEA_DATABASE_URL differently: %v vs %v", memDB, jobDB)
		}
	})
}

func TestK8sDevOverlay(t *testing.T) {
	m := buildOverlay(t, "overlays/dev")
	checkNamespace(t, m, "zoea-dev")
	for _, name := range []string{"postgres", "nats"} {
		if m.statefulSets[name] == nil || m.services[name] == nil {
			t.Errorf("dev overlay lacks the %s StatefulSet and Service", name)
		}
	}
	if nats := m.statefulSets["nats"]; nats != nil {
		c := nats.Spec.Template.Spec.Containers[0]
		if !slices.Contains(c.Args, "--jetstream") || !slices.Contains(c.Args, "--store_dir") {
			t.Errorf("dev NATS args %v: want JetStream with a file store", c.Args)
		}
		if len(nats.Spec.VolumeClaimTemplates) == 0 {
			t.Error("dev NATS keeps JetStream data on no volume")
		}
	}
	if pg := m.statefulSets["postgres"]; pg != nil && len(pg.Spec.VolumeClaimTemplates) == 0 {
		t.Error("dev Postgres keeps its data on no volume")
	}
	// The dev images are built and loaded by hand: a pull would fetch whatever a registry serves as zoea/<svc>:dev.
	for name, d := range m.deployments {
		for _, c := range d.Spec.Template.Spec.Containers {
			if strings.HasPrefix(c.Image, "zoea/") && c.ImagePullPolicy != corev1.PullNever {
				t.Errorf("dev Deployment %s container %s (%s): imagePullPolicy %q, want Never", name, c.Name, c.Image, c.ImagePullPolicy)
			}
		}
	}
	for name, j := range m.jobs {
		for _, c := range j.Spec.Template.Spec.Containers {
			if strings.HasPrefix(c.Image, "zoea/") && c.ImagePullPolicy != corev1.PullNever {
				t.Errorf("dev Job %s container %s (%s): imagePullPolicy %q, want Never", name, c.Name, c.Image, c.ImagePullPolicy)
			}
		}
	}
	for name, d := range m.deployments {
		if name != "runner" && (d.Spec.Replicas == nil || *d.Spec.Replicas != 1) {
			t.Errorf("dev Deployment %s replicas %v, want 1", name, d.Spec.Replicas)
		}
		image := name
		if name == webConsole.name {
			image = "zoea" // the CLI's image runs `zoea web`
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "zoea/"+image+":dev" {
			t.Errorf("dev Deployment %s image %s, want zoea/%s:dev", name, img, image)
		}
	}
	if hpa := m.hpas["runner"]; hpa != nil && (hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas != 1) {
		t.Errorf("dev runner HPA minReplicas %v, want 1", hpa.Spec.MinReplicas)
	}
	if len(m.deployments) != len(zoeaServices)+1 {
		t.Errorf("dev has %d Deployments, want every Zoea service (%d) and the web console", len(m.deployments), len(zoeaServices))
	}

	// The generated dev Secret points the services at the in-cluster Postgres with the password Postgres gets.
	var secret, pgCreds *corev1.Secret
	for name, s := range m.secrets {
		switch {
		case strings.HasPrefix(name, "zoea-secrets"):
			secret = s
		case strings.HasPrefix(name, "postgres-credentials"):
			pgCreds = s
		}
	}
	if secret == nil || pgCreds == nil {
		t.Fatal("dev overlay must generate zoea-secrets and postgres-credentials")
	}
	for _, k := range []string{"ZOEA_ADMIN_TOKEN", "ZOEA_SECRET_KEY", "ZOEA_DATABASE_URL"} {
		if len(secretValue(secret, k)) == 0 {
			t.Errorf("dev zoea-secrets lacks %s", k)
		}
	}
	u, err := url.Parse(secretValue(secret, "ZOEA_DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	if pw != secretValue(pgCreds, "POSTGRES_PASSWORD") {
		t.Error("dev ZOEA_DATABASE_URL password differs from POSTGRES_PASSWORD")
	}
	checkServicePort(t, m, "ZOEA_DATABASE_URL", u.Hostname(), u.Port())
	var cm *corev1.ConfigMap
	for name, c := range m.configMaps {
		if strings.HasPrefix(name, "zoea-config") {
			cm = c
		}
	}
	su, err := url.Parse(cm.Data["ZOEA_SPACEMOLT_URL"])
	if err != nil {
		t.Fatal(err)
	}
	checkServicePort(t, m, "ZOEA_SPACEMOLT_URL", su.Hostname(), su.Port())
}

func secretValue(s *corev1.Secret, k string) string {
	if v, ok := s.Data[k]; ok {
		return string(v)
	}
	return s.StringData[k]
}

func TestK8sProdOverlay(t *testing.T) {
	m := buildOverlay(t, "overlays/prod")
	checkNamespace(t, m, "zoea")
	if len(m.statefulSets) != 0 {
		t.Errorf("prod runs StatefulSets %v; Postgres and NATS are external (CloudNativePG, NATS Helm chart)", keys(m.statefulSets))
	}
	for _, name := range []string{"postgres", "nats", "spacemolt-sim"} {
		if m.services[name] != nil || m.deployments[name] != nil {
			t.Errorf("prod deploys %s", name)
		}
	}
	if len(m.secrets) != 0 {
		t.Errorf("prod generates Secrets %v; credentials must come from outside the repository", keys(m.secrets))
	}
	for name, d := range m.deployments {
		img := d.Spec.Template.Spec.Containers[0].Image
		if strings.HasPrefix(img, "zoea/") || strings.HasSuffix(img, ":dev") {
			t.Errorf("prod Deployment %s runs the development image %s", name, img)
		}
		if len(d.Spec.Template.Spec.TopologySpreadConstraints) < 2 {
			t.Errorf("prod Deployment %s does not spread over zones and nodes", name)
		}
		for _, tsc := range d.Spec.Template.Spec.TopologySpreadConstraints {
			sel, err := metav1.LabelSelectorAsSelector(tsc.LabelSelector)
			if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) || !slices.Contains(tsc.MatchLabelKeys, "app.kubernetes.io/name") {
				t.Errorf("prod Deployment %s: topology spread on %s does not select its own pods", name, tsc.TopologyKey)
			}
		}
		if name != "runner" && (d.Spec.Replicas == nil || *d.Spec.Replicas < 2) {
			t.Errorf("prod Deployment %s replicas %v, want at least 2", name, d.Spec.Replicas)
		}
	}
	if hpa := m.hpas["runner"]; hpa == nil || hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 3 {
		t.Error("prod runner HPA must keep at least 3 replicas")
	}
	dev := buildOverlay(t, "overlays/dev")
	for _, name := range []string{"memory", "runner"} {
		p, d := m.deployments[name].Spec.Template.Spec.Containers[0].Resources, dev.deployments[name].Spec.Template.Spec.Containers[0].Resources
		if p.Limits.Memory().Cmp(*d.Limits.Memory()) <= 0 || p.Requests.Cpu().Cmp(*d.Requests.Cpu()) <= 0 {
			t.Errorf("prod %s resources are not above dev's", name)
		}
	}
	// Postgres from CloudNativePG's app Secret, NATS from the Helm release's Service.
	for _, c := range []corev1.Container{m.deployments["memory"].Spec.Template.Spec.Containers[0], m.jobs["memory-migrate"].Spec.Template.Spec.Containers[0]} {
		e := containerEnvVar(c, "ZOEA_DATABASE_URL")
		if e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != cnpgAppSecret(t) || e.ValueFrom.SecretKeyRef.Key != "uri" {
			t.Errorf("prod %s: ZOEA_DATABASE_URL must come from the CloudNativePG Secret %s key uri, got %+v", c.Name, cnpgAppSecret(t), e)
		}
	}
	var cm *corev1.ConfigMap
	for name, c := range m.configMaps {
		if strings.HasPrefix(name, "zoea-config") {
			cm = c
		}
	}
	if u, err := url.Parse(cm.Data["ZOEA_SPACEMOLT_URL"]); err != nil || u.Scheme != "https" {
		t.Errorf("prod ZOEA_SPACEMOLT_URL=%q, want the real game over https", cm.Data["ZOEA_SPACEMOLT_URL"])
	}
}

func checkNamespace(t *testing.T, m *manifests, ns string) {
	t.Helper()
	if m.namespaces[ns] == nil {
		t.Errorf("%s does not create Namespace %s", m.overlay, ns)
	} else if m.namespaces[ns].Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("Namespace %s does not enforce the restricted Pod Security Standard", ns)
	}
	for _, o := range m.objects {
		if _, isNS := o.(*corev1.Namespace); !isNS && o.GetNamespace() != ns {
			t.Errorf("%T %s is in namespace %q, want %s", o, o.GetName(), o.GetNamespace(), ns)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// cnpgAppSecret is the Secret CloudNativePG generates for deploy/k8s/external/cnpg-cluster.yaml: <cluster>-app.
// The manifest is decoded strictly: a field this struct does not know (a typo, or a setting the operator would
// reject) fails the test.
func cnpgAppSecret(t *testing.T) string {
	t.Helper()
	var cluster struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Spec struct {
			Instances             int    `json:"instances"`
			ImageName             string `json:"imageName"`
			PrimaryUpdateStrategy string `json:"primaryUpdateStrategy"`
			PostgreSQL            struct {
				Synchronous *struct {
					Method         string `json:"method"`
					Number         int    `json:"number"`
					DataDurability string `json:"dataDurability"`
				} `json:"synchronous"`
			} `json:"postgresql"`
			Bootstrap struct {
				InitDB struct {
					Database string `json:"database"`
					Owner    string `json:"owner"`
				} `json:"initdb"`
			} `json:"bootstrap"`
			Storage struct {
				Size string `json:"size"`
			} `json:"storage"`
			Resources  corev1.ResourceRequirements `json:"resources"`
			Monitoring struct {
				EnablePodMonitor bool `json:"enablePodMonitor"`
			} `json:"monitoring"`
		} `json:"spec"`
	}
	rel := "deploy/k8s/external/cnpg-cluster.yaml"
	b, err := os.ReadFile(filepath.Join(repoRoot(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, &cluster); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	if cluster.APIVersion != "postgresql.cnpg.io/v1" || cluster.Kind != "Cluster" {
		t.Fatalf("cnpg-cluster.yaml is %s %s, want postgresql.cnpg.io/v1 Cluster", cluster.APIVersion, cluster.Kind)
	}
	if cluster.Metadata.Namespace != "zoea" {
		t.Errorf("the CloudNativePG Cluster must live in the prod namespace zoea (its Secret is read there), got %q", cluster.Metadata.Namespace)
	}
	if cluster.Spec.Bootstrap.InitDB.Database != "zoea" || cluster.Spec.Instances < 2 {
		t.Errorf("CloudNativePG Cluster: database %q, %d instances; want zoea and high availability", cluster.Spec.Bootstrap.InitDB.Database, cluster.Spec.Instances)
	}
	// Synchronous replication (what make chaos -postgres patroni proves): a failover loses no acknowledged commit
	// only if a replica confirmed it, and one replica may be lost without blocking writes.
	switch s := cluster.Spec.PostgreSQL.Synchronous; {
	case s == nil:
		t.Errorf("%s: spec.postgresql.synchronous is not set: replication is asynchronous and a failover can lose acknowledged appends", rel)
	case s.Method != "any" && s.Method != "first":
		t.Errorf("%s: spec.postgresql.synchronous.method = %q, want any or first", rel, s.Method)
	case s.Number < 1 || s.Number > cluster.Spec.Instances-2:
		t.Errorf("%s: spec.postgresql.synchronous.number = %d with %d instances: want at least 1, and a replica to spare (≤ instances-2)", rel, s.Number, cluster.Spec.Instances)
	case s.DataDurability != "" && s.DataDurability != "required":
		t.Errorf("%s: spec.postgresql.synchronous.dataDurability = %q: only required keeps acknowledged commits on a replica when replicas are down", rel, s.DataDurability)
	}
	if _, err := resource.ParseQuantity(cluster.Spec.Storage.Size); err != nil {
		t.Errorf("CloudNativePG storage size: %v", err)
	}
	return cluster.Metadata.Name + "-app"
}

// natsHelmService is the client Service of the NATS Helm release described in deploy/k8s/external/nats-values.yaml.
func natsHelmService(t *testing.T) string {
	t.Helper()
	var values struct {
		FullnameOverride  string `json:"fullnameOverride"`
		NamespaceOverride string `json:"namespaceOverride"`
		Config            struct {
			Cluster struct {
				Enabled  bool `json:"enabled"`
				Replicas int  `json:"replicas"`
			} `json:"cluster"`
			JetStream struct {
				Enabled   bool `json:"enabled"`
				FileStore struct {
					Enabled *bool `json:"enabled"`
					PVC     struct {
						Size string `json:"size"`
					} `json:"pvc"`
				} `json:"fileStore"`
			} `json:"jetstream"`
		} `json:"config"`
	}
	readYAML(t, "deploy/k8s/external/nats-values.yaml", &values)
	if !values.Config.JetStream.Enabled {
		t.Error("nats-values.yaml does not enable JetStream")
	}
	if fs := values.Config.JetStream.FileStore; (fs.Enabled != nil && !*fs.Enabled) || fs.PVC.Size == "" {
		t.Error("nats-values.yaml must keep JetStream on a persistent file store")
	}
	if !values.Config.Cluster.Enabled || values.Config.Cluster.Replicas < 3 {
		t.Error("nats-values.yaml: want a clustered NATS (3+ replicas) so JetStream streams can be replicated")
	}
	if values.FullnameOverride == "" || values.NamespaceOverride == "" {
		t.Fatal("nats-values.yaml must pin fullnameOverride and namespaceOverride: the prod overlay addresses the Service by name")
	}
	return values.FullnameOverride + "." + values.NamespaceOverride + ".svc.cluster.local"
}

func readYAML(t *testing.T, rel string, into any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}

// docs/OPERATIONS.md "Replicas per service" states how each service runs; the base manifests must match it.
func TestOperationsReplicasMatchK8s(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "OPERATIONS.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Replicas per service\n")
	if !ok {
		t.Fatal(`docs/OPERATIONS.md has no "## Replicas per service" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	stated := map[string]string{}
	for line := range strings.SplitSeq(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || strings.Contains(cells[1], "---") || strings.TrimSpace(cells[1]) == "service" {
			continue
		}
		stated[strings.TrimSpace(cells[1])] = strings.TrimSpace(cells[2])
	}
	m := buildOverlay(t, "base")
	for _, name := range []string{"runner", "memory", "composer", "bus", "spacemolt-sim", "web"} {
		want, ok := stated[name]
		if !ok {
			t.Errorf("docs/OPERATIONS.md does not say how %s runs", name)
			continue
		}
		d := m.deployments[name]
		if d == nil {
			t.Errorf("no %s Deployment in the base", name)
			continue
		}
		if hpa := m.hpas[name]; hpa != nil {
			if got := fmt.Sprintf("HPA %d–%d", *hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas); got != want {
				t.Errorf("%s: the base has %s, docs/OPERATIONS.md says %q", name, got, want)
			}
		} else {
			got := "1"
			if d.Spec.Replicas != nil {
				got = strconv.Itoa(int(*d.Spec.Replicas))
			}
			if got != want {
				t.Errorf("%s: the base runs %s replicas, docs/OPERATIONS.md says %q", name, got, want)
			}
		}
		if want == "1" {
			if m.pdbs[name] != nil {
				t.Errorf("%s runs one replica: a PodDisruptionBudget would only block drains", name)
			}
			if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
				t.Errorf("%s runs exactly one replica: want the Recreate strategy, got %q", name, d.Spec.Strategy.Type)
			}
			continue
		}
		if pdb := m.pdbs[name]; pdb == nil || pdb.Spec.MaxUnavailable == nil {
			t.Errorf("%s runs several replicas: want a PodDisruptionBudget with maxUnavailable", name)
		}
	}
}
