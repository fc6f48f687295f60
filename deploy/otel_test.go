package deploy

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// collectorConfig is the part of an OpenTelemetry Collector configuration the checks read.
type collectorConfig struct {
	Receivers  map[string]map[string]any `json:"receivers"`
	Processors map[string]map[string]any `json:"processors"`
	Exporters  map[string]map[string]any `json:"exporters"`
	Extensions map[string]map[string]any `json:"extensions"`
	Service    struct {
		Extensions []string `json:"extensions"`
		Pipelines  map[string]struct {
			Receivers  []string `json:"receivers"`
			Processors []string `json:"processors"`
			Exporters  []string `json:"exporters"`
		} `json:"pipelines"`
	} `json:"service"`
}

// componentType is the type part of a component id such as "otlp_grpc/jaeger".
func componentType(id string) string {
	typ, _, _ := strings.Cut(id, "/")
	return typ
}

func TestCollectorConfig(t *testing.T) {
	var cfg collectorConfig
	readYAML(t, "deploy/otel/collector.yaml", &cfg)

	// The services export OTLP/gRPC to :4317 (OTEL_EXPORTER_OTLP_ENDPOINT=http://otel-collector:4317).
	otlp, ok := cfg.Receivers["otlp"]
	if !ok {
		t.Fatal("no otlp receiver")
	}
	protocols, _ := otlp["protocols"].(map[string]any)
	for proto, port := range map[string]string{"grpc": "4317", "http": "4318"} {
		p, _ := protocols[proto].(map[string]any)
		endpoint, _ := p["endpoint"].(string)
		host, gotPort, err := net.SplitHostPort(endpoint)
		if err != nil || gotPort != port || host != "0.0.0.0" {
			t.Errorf("otlp receiver %s endpoint %q, want 0.0.0.0:%s (reachable from the other containers)", proto, endpoint, port)
		}
	}

	for _, want := range []string{"traces", "metrics"} {
		p, ok := cfg.Service.Pipelines[want]
		if !ok {
			t.Errorf("no %s pipeline: the services export %s and would log export errors", want, want)
			continue
		}
		if !slices.Contains(p.Receivers, "otlp") {
			t.Errorf("%s pipeline does not receive OTLP", want)
		}
		if !slices.Contains(p.Processors, "batch") {
			t.Errorf("%s pipeline has no batch processor", want)
		}
		if i := slices.Index(p.Processors, "memory_limiter"); i > 0 {
			t.Errorf("%s pipeline: memory_limiter must be the first processor", want)
		}
		if !slices.ContainsFunc(p.Exporters, func(e string) bool { return componentType(e) == "debug" }) {
			t.Errorf("%s pipeline has no debug exporter", want)
		}
	}
	traces := cfg.Service.Pipelines["traces"]
	jaeger := ""
	for _, e := range traces.Exporters {
		if typ := componentType(e); typ == "otlp_grpc" || typ == "otlp" {
			ep, _ := cfg.Exporters[e]["endpoint"].(string)
			jaeger = ep
		}
	}
	if jaeger != "jaeger:4317" {
		t.Errorf("traces are exported to %q, want Jaeger's OTLP gRPC receiver jaeger:4317", jaeger)
	}

	// Every component a pipeline names is configured, and every configured component is used.
	used := map[string]bool{}
	for name, p := range cfg.Service.Pipelines {
		for kind, ids := range map[string][]string{"receiver": p.Receivers, "processor": p.Processors, "exporter": p.Exporters} {
			defined := map[string]map[string]map[string]any{"receiver": cfg.Receivers, "processor": cfg.Processors, "exporter": cfg.Exporters}[kind]
			for _, id := range ids {
				if _, ok := defined[id]; !ok {
					t.Errorf("pipeline %s uses %s %q, which is not configured", name, kind, id)
				}
				used[kind+":"+id] = true
			}
		}
	}
	for kind, defined := range map[string]map[string]map[string]any{"receiver": cfg.Receivers, "processor": cfg.Processors, "exporter": cfg.Exporters} {
		for id := range defined {
			if !used[kind+":"+id] {
				t.Errorf("%s %q is configured but no pipeline uses it (the collector refuses that)", kind, id)
			}
		}
	}
	for _, ext := range cfg.Service.Extensions {
		if _, ok := cfg.Extensions[ext]; !ok {
			t.Errorf("service enables extension %q, which is not configured", ext)
		}
	}

	// The otlp_grpc exporter name exists from collector 0.144 on: the image compose runs must be at least that.
	p := loadCompose(t, nil, "observability")
	image := p.Services["otel-collector"].Image
	_, tag, _ := strings.Cut(image, ":")
	parts := strings.Split(tag, ".")
	minor := -1
	if len(parts) == 3 && parts[0] == "0" {
		minor, _ = strconv.Atoi(parts[1])
	}
	usesNewNames := false
	for id := range cfg.Exporters {
		if componentType(id) == "otlp_grpc" || componentType(id) == "otlp_http" {
			usesNewNames = true
		}
	}
	if usesNewNames && minor < 144 {
		t.Errorf("collector image %s predates the otlp_grpc/otlp_http exporter names (0.144.0); pin 0.144.0 or later", image)
	}
	if _, ok := p.Services["jaeger"]; !ok {
		t.Error("the observability profile has no jaeger service for the traces exporter")
	}
}
