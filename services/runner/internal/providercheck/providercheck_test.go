package providercheck_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/runner/internal/providercheck"
)

// closedURL is an address nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestCheckSaysWhatIsWrong(t *testing.T) {
	ollama := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/tags" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"models":[{"name":"qwen3:8b","model":"qwen3:8b"},{"name":"llama3:latest","model":"llama3:latest"}]}`))
	}))
	defer ollama.Close()
	openai := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-good" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"gpt-4o-mini"},{"id":"gpt-4o"}]}`))
	}))
	defer openai.Close()
	down := closedURL(t)

	for _, tc := range []struct {
		name            string
		cfg             providercheck.Config
		provider, model string
		kind            errs.Kind // errs.Internal means: no error
		field           string
		says            []string
	}{
		{"autopilot default", providercheck.Config{}, "autopilot", "autopilot", errs.Internal, "", nil},
		{"autopilot with a model", providercheck.Config{}, "autopilot", "foo", errs.Invalid, "model", []string{"autopilot", `"foo" would be ignored`, "--provider ollama or openai"}},
		{"ollama down", providercheck.Config{OllamaHost: down}, "ollama", "qwen3:8b", errs.Conflict, "", []string{"provider ollama is not reachable at " + down, "OLLAMA_HOST"}},
		{"ollama has it", providercheck.Config{OllamaHost: ollama.URL}, "ollama", "qwen3:8b", errs.Internal, "", nil},
		{"ollama :latest", providercheck.Config{OllamaHost: ollama.URL}, "ollama", "llama3", errs.Internal, "", nil},
		{"ollama lacks it", providercheck.Config{OllamaHost: ollama.URL}, "ollama", "mistral", errs.Invalid, "model", []string{`no model "mistral"`, "qwen3:8b, llama3:latest", "ollama pull mistral"}},
		{"openai without key", providercheck.Config{}, "openai", "gpt-4o-mini", errs.Conflict, "", []string{"OPENAI_API_KEY"}},
		{"openai bad key", providercheck.Config{OpenAIBaseURL: openai.URL, OpenAIKey: "sk-bad"}, "openai", "gpt-4o-mini", errs.Conflict, "", []string{"refused the runner's OPENAI_API_KEY"}},
		{"openai base wants a key", providercheck.Config{OpenAIBaseURL: openai.URL}, "openai", "gpt-4o-mini", errs.Conflict, "", []string{"wants an API key", "OPENAI_API_KEY"}},
		{"openai ok", providercheck.Config{OpenAIBaseURL: openai.URL, OpenAIKey: "sk-good"}, "openai", "gpt-4o", errs.Internal, "", nil},
		{"openai unknown model", providercheck.Config{OpenAIBaseURL: openai.URL, OpenAIKey: "sk-good"}, "openai", "gpt-9", errs.Invalid, "model", []string{`no model "gpt-9"`, "gpt-4o-mini, gpt-4o"}},
		{"openai down", providercheck.Config{OpenAIBaseURL: down, OpenAIKey: "k"}, "openai", "m", errs.Conflict, "", []string{"not reachable at " + down}},
		{"skipped", providercheck.Config{OllamaHost: down, Skip: []string{"ollama"}}, "ollama", "x", errs.Internal, "", nil},
		{"unknown provider passes", providercheck.Config{}, "scripted", "x", errs.Internal, "", nil},
	} {
		err := providercheck.New(tc.cfg).Check(context.Background(), tc.provider, tc.model)
		if tc.kind == errs.Internal {
			if err != nil {
				t.Errorf("%s: unexpected error %v", tc.name, err)
			}
			continue
		}
		if !errs.Is(err, tc.kind) || errs.FieldOf(err) != tc.field {
			t.Errorf("%s: got %v (kind %v, field %q), want kind %v field %q", tc.name, err, errs.KindOf(err), errs.FieldOf(err), tc.kind, tc.field)
			continue
		}
		for _, s := range tc.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not say %q", tc.name, err, s)
			}
		}
	}
}
