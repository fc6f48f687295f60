package config_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/config"
)

type inner struct {
	URL string `env:"TEST_ZOEA_URL" envDefault:"postgres://x"`
}

type sample struct {
	Addr    string        `env:"TEST_ZOEA_ADDR" envDefault:":7001"`
	Tick    time.Duration `env:"TEST_ZOEA_TICK" envDefault:"10s"`
	Token   config.Secret `env:"TEST_ZOEA_TOKEN"`
	Code    string        `env:"TEST_ZOEA_CODE" secret:"true"`
	Workers int           `env:"TEST_ZOEA_WORKERS" envDefault:"4"`
	Inner   inner
}

func TestLoadDefaultsAndOverrides(t *testing.T) {
	t.Setenv("TEST_ZOEA_TICK", "250ms")
	t.Setenv("TEST_ZOEA_TOKEN", "hunter2")
	cfg, err := config.Load[sample]()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != ":7001" || cfg.Tick != 250*time.Millisecond || cfg.Workers != 4 || cfg.Inner.URL != "postgres://x" {
		t.Fatalf("unexpected config %+v", cfg)
	}
	if cfg.Token.Reveal() != "hunter2" {
		t.Fatalf("secret not loaded")
	}
}

func TestLoadRejectsBadValue(t *testing.T) {
	t.Setenv("TEST_ZOEA_WORKERS", "many")
	if _, err := config.Load[sample](); err == nil || !strings.Contains(err.Error(), "TEST_ZOEA_WORKERS") {
		t.Fatalf("want an error naming TEST_ZOEA_WORKERS, got %v", err)
	}
}

func TestLoadWithKeepsPreset(t *testing.T) {
	cfg := struct {
		Addr string `env:"TEST_ZOEA_LISTEN"`
	}{Addr: ":7003"}
	if err := config.LoadWith(&cfg); err != nil || cfg.Addr != ":7003" {
		t.Fatalf("preset lost: %v %q", err, cfg.Addr)
	}
	t.Setenv("TEST_ZOEA_LISTEN", ":9000")
	if err := config.LoadWith(&cfg); err != nil || cfg.Addr != ":9000" {
		t.Fatalf("override lost: %v %q", err, cfg.Addr)
	}
}

func TestLogMasksSecrets(t *testing.T) {
	t.Setenv("TEST_ZOEA_TOKEN", "hunter2")
	t.Setenv("TEST_ZOEA_CODE", "letmein")
	cfg, err := config.Load[sample]()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	config.Log(slog.New(slog.NewTextHandler(&buf, nil)), "config", cfg)
	out := buf.String()
	for _, leak := range []string{"hunter2", "letmein"} {
		if strings.Contains(out, leak) {
			t.Fatalf("secret %q leaked: %s", leak, out)
		}
	}
	for _, want := range []string{"TEST_ZOEA_TOKEN=****", "TEST_ZOEA_CODE=****", "TEST_ZOEA_TICK=10s", "TEST_ZOEA_URL=postgres://x"} {
		if !strings.Contains(out, want) {
			t.Fatalf("missing %q in %s", want, out)
		}
	}
	if s := fmt.Sprint(cfg.Token); s != "****" {
		t.Fatalf("fmt leaked secret: %q", s)
	}
}

func TestRedactURLHidesPasswords(t *testing.T) {
	for raw, want := range map[string]string{
		"postgres://zoea:hunter2@db:5432/zoea": "postgres://zoea:xxxxx@db:5432/zoea",
		"nats://user:s3cret@nats:4222":         "nats://user:xxxxx@nats:4222",
		"nats://127.0.0.1:4222":                "nats://127.0.0.1:4222",
		"postgres://zoea:hunter2@db:5432/%zz":  "(unparseable URL)",
	} {
		if got := config.RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// Secrets finds every value a redactor must know: Secret fields, secret-tagged strings and the password (or token)
// inside a secret URL, in nested structs too.
func TestSecrets(t *testing.T) {
	type withURL struct {
		NATS  string `env:"TEST_ZOEA_NATS" secret:"true"`
		Token string `env:"TEST_ZOEA_NATS_TOKEN_URL" secret:"true"`
	}
	type all struct {
		S     sample
		U     withURL
		Plain string `env:"TEST_ZOEA_PLAIN"`
	}
	cfg := all{S: sample{Token: "hunter2hunter2", Code: "letmeinletmein"},
		U: withURL{NATS: "nats://runner:natspass99@nats:4222", Token: "nats://s3cr3t-token-value@nats:4222"}, Plain: "visible"}
	got := strings.Join(config.Secrets(cfg), " ")
	for _, want := range []string{"hunter2hunter2", "letmeinletmein", "natspass99", "s3cr3t-token-value"} {
		if !strings.Contains(got, want) {
			t.Errorf("Secrets misses %q: %s", want, got)
		}
	}
	if strings.Contains(got, "visible") {
		t.Errorf("Secrets returns a plain field: %s", got)
	}
}
