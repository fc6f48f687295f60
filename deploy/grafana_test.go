package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// runnerMetrics are the Prometheus names of the runner's OpenTelemetry instruments
// (services/runner/internal/llmmetrics) as the collector's Prometheus exporter writes them: dots become
// underscores, counters gain _total, histograms _bucket/_sum/_count, and the unit "s" becomes _seconds.
var runnerMetrics = []string{
	"gen_ai_client_token_usage", "gen_ai_client_operation_duration_seconds",
	"zoea_llm_tokens_total", "zoea_llm_cost_usd_total", "zoea_turns_total", "zoea_tool_calls_total",
	"zoea_compose_tokens", "zoea_compose_budget_ratio", "zoea_spend_limit_stops_total",
}

type grafanaDashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int    `json:"id"`
		Title      string `json:"title"`
		Type       string `json:"type"`
		Datasource struct {
			Type string `json:"type"`
			UID  string `json:"uid"`
		} `json:"datasource"`
		GridPos struct{ X, Y, W, H int } `json:"gridPos"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

func TestGrafanaDashboard(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "deploy", "grafana", "dashboards", "zoea-usage.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	var ds datasourcesFile
	readYAML(t, "deploy/grafana/provisioning/datasources/prometheus.yaml", &ds)
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL != "http://prometheus:9090" {
		t.Fatalf("data source %+v, want one prometheus at http://prometheus:9090", ds.Datasources)
	}
	dsUID := ds.Datasources[0].UID
	if d.UID == "" || d.Title == "" {
		t.Fatal("dashboard needs a uid and a title")
	}

	// The panels: tokens and cost per mysis over time, turns per second, tool errors, composed tokens vs
	// budget, LLM latency.
	want := []string{"Tokens per mysis", "Cost per mysis (USD per hour)", "Turns per second", "Tool errors",
		"Composed tokens vs budget", "LLM latency", "Spend-limit stops"}
	var titles []string
	ids := map[int]bool{}
	metricRe := regexp.MustCompile(`[a-z_]+(?:_bucket|_sum|_count|_total)?\b`)
	for _, p := range d.Panels {
		titles = append(titles, p.Title)
		if ids[p.ID] {
			t.Errorf("panel id %d repeats", p.ID)
		}
		ids[p.ID] = true
		if p.Datasource.UID != dsUID {
			t.Errorf("panel %q uses data source %q, provisioned is %q", p.Title, p.Datasource.UID, dsUID)
		}
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q grid %+v", p.Title, p.GridPos)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.Count(tg.Expr, "(") != strings.Count(tg.Expr, ")") || strings.Count(tg.Expr, "{") != strings.Count(tg.Expr, "}") {
				t.Errorf("panel %q: unbalanced query %s", p.Title, tg.Expr)
			}
			known := false
			for _, tok := range metricRe.FindAllString(tg.Expr, -1) {
				for _, m := range runnerMetrics {
					if tok == m || strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(tok, "_bucket"), "_sum"), "_count") == m {
						known = true
					}
				}
			}
			if !known {
				t.Errorf("panel %q queries no metric the runner exports: %s", p.Title, tg.Expr)
			}
		}
	}
	for _, w := range want {
		if !slices.Contains(titles, w) {
			t.Errorf("dashboard lacks panel %q (has %v)", w, titles)
		}
	}
	for _, v := range d.Templating.List {
		if v.Datasource.UID != dsUID {
			t.Errorf("variable %s uses data source %q", v.Name, v.Datasource.UID)
		}
	}
}

type datasourcesFile struct {
	APIVersion  int `json:"apiVersion"`
	Datasources []struct {
		Name string `json:"name"`
		UID  string `json:"uid"`
		Type string `json:"type"`
		URL  string `json:"url"`
	} `json:"datasources"`
}

func TestGrafanaAndPrometheusProvisioning(t *testing.T) {
	root := repoRoot(t)
	var prov struct {
		APIVersion int `json:"apiVersion"`
		Providers  []struct {
			Type    string `json:"type"`
			Options struct {
				Path string `json:"path"`
			} `json:"options"`
		} `json:"providers"`
	}
	readYAML(t, "deploy/grafana/provisioning/dashboards/zoea.yaml", &prov)
	if prov.APIVersion != 1 || len(prov.Providers) != 1 || prov.Providers[0].Type != "file" {
		t.Fatalf("dashboard provider %+v", prov)
	}

	// Compose mounts the provisioning directory and the dashboards where the provider looks.
	p := loadCompose(t, nil, "observability")
	g := p.Services["grafana"]
	mounts := map[string]string{}
	for _, v := range g.Volumes {
		if !v.ReadOnly {
			t.Errorf("grafana mounts %s read-write", v.Source)
		}
		mounts[v.Target] = v.Source
	}
	if mounts["/etc/grafana/provisioning"] != filepath.Join(root, "deploy", "grafana", "provisioning") {
		t.Errorf("grafana provisioning mount %q", mounts["/etc/grafana/provisioning"])
	}
	if mounts[prov.Providers[0].Options.Path] != filepath.Join(root, "deploy", "grafana", "dashboards") {
		t.Errorf("dashboards path %s is not where deploy/grafana/dashboards is mounted (%v)", prov.Providers[0].Options.Path, mounts)
	}

	// Prometheus scrapes the collector's Prometheus exporter, which is in the metrics pipeline.
	var prom struct {
		ScrapeConfigs []struct {
			StaticConfigs []struct {
				Targets []string `json:"targets"`
			} `json:"static_configs"`
		} `json:"scrape_configs"`
	}
	readYAML(t, "deploy/prometheus/prometheus.yml", &prom)
	var col collectorConfig
	readYAML(t, "deploy/otel/collector.yaml", &col)
	endpoint, _ := col.Exporters["prometheus"]["endpoint"].(string)
	_, port, _ := strings.Cut(endpoint, ":")
	if port == "" || !slices.Contains(col.Service.Pipelines["metrics"].Exporters, "prometheus") {
		t.Fatalf("collector has no prometheus exporter in its metrics pipeline (endpoint %q)", endpoint)
	}
	scraped := false
	for _, sc := range prom.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			scraped = scraped || slices.Contains(st.Targets, "otel-collector:"+port)
		}
	}
	if !scraped {
		t.Errorf("prometheus does not scrape otel-collector:%s", port)
	}
	pm := p.Services["prometheus"]
	found := false
	for _, v := range pm.Volumes {
		found = found || (v.Source == filepath.Join(root, "deploy", "prometheus", "prometheus.yml") && v.ReadOnly)
	}
	if !found || !strings.Contains(strings.Join(pm.Command, " "), "--config.file=/etc/prometheus/prometheus.yml") {
		t.Errorf("prometheus does not run with deploy/prometheus/prometheus.yml: %v %v", pm.Volumes, pm.Command)
	}
}
