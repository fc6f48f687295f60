package app

import (
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/memoryrules"
	"github.com/zoeaswarm/zoea/services/runner/internal/provider/autopilot"
	"github.com/zoeaswarm/zoea/services/runner/internal/provider/ollama"
)

// The reply limit and the call timeout are read once, with their defaults, and a value that would break every
// call is refused naming the variable.
func TestLLMLimitsConfig(t *testing.T) {
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LLMMaxReplyBytes != 8<<20 || cfg.LLMTimeout.String() != "10m0s" {
		t.Errorf("defaults: %d bytes, %v", cfg.LLMMaxReplyBytes, cfg.LLMTimeout)
	}
	for env, want := range map[string]string{
		"ZOEA_LLM_MAX_REPLY_BYTES=1000": "ZOEA_LLM_MAX_REPLY_BYTES must be at least 65536",
		"ZOEA_LLM_MAX_REPLY_BYTES=-1":   "ZOEA_LLM_MAX_REPLY_BYTES must be at least 65536",
		"ZOEA_LLM_TIMEOUT=-1s":          "ZOEA_LLM_TIMEOUT must not be negative",
	} {
		k, v, _ := strings.Cut(env, "=")
		t.Run(env, func(t *testing.T) {
			t.Setenv(k, v)
			if _, err := LoadConfig(); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("err = %v, want %q", err, want)
			}
		})
	}
}

// The autopilot provider's name is written once (memoryrules.AutopilotProvider); the two places a constant cannot
// reach — the default provider's env tag and the registry name the autopilot package gives itself — must agree.
func TestAutopilotNameAgrees(t *testing.T) {
	t.Setenv("ZOEA_DEFAULT_PROVIDER", "") // restored after the test
	os.Unsetenv("ZOEA_DEFAULT_PROVIDER")
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DefaultProvider != memoryrules.AutopilotProvider || autopilot.DefaultName != memoryrules.AutopilotProvider {
		t.Errorf("default provider %q, autopilot registry name %q, want both %q", cfg.DefaultProvider, autopilot.DefaultName, memoryrules.AutopilotProvider)
	}
}

// OLLAMA_HOST is read once, by the configuration, in any form Ollama itself accepts: "host:port" without a scheme
// (Ollama's documented form) used to reach the adapter as it was and stop the runner at start ("not an absolute URL").
func TestOllamaHostForms(t *testing.T) {
	for v, want := range map[string]string{
		"":                       "http://127.0.0.1:11434",
		"127.0.0.1:11434":        "http://127.0.0.1:11434",
		"gpu-box":                "http://gpu-box:11434",
		"http://gpu-box:8080/":   "http://gpu-box:8080",
		"https://gw.example/oll": "https://gw.example:443/oll",
	} {
		t.Setenv("OLLAMA_HOST", v)
		cfg, err := LoadConfig()
		if err != nil {
			t.Fatal(err)
		}
		u, err := ollama.HostURL(cfg.OllamaHost)
		if err != nil || u != want {
			t.Errorf("OLLAMA_HOST=%q: %q, %v; want %q", v, u, err, want)
			continue
		}
		if _, names, err := buildProviders(cfg, u, nil, nil, slog.Default(), nil); err != nil || !slices.Contains(names, "ollama") {
			t.Errorf("OLLAMA_HOST=%q: providers %v, %v", v, names, err)
		}
	}
}
