// Package providercheck answers, when the commander creates or configures a mysis, whether its provider can serve
// it right now: Ollama answers and has the model pulled, OpenAI has a key (and lists the model, where its /models
// endpoint answers), autopilot is not given a model it would silently ignore. Without it, `configure --provider
// ollama` with no Ollama running was accepted and the mysis failed seconds later with a transport error.
//
// The checks cost one short HTTP request and run only on create/configure, never per turn.
package providercheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/memoryrules"
)

// Config says where the providers are; it mirrors the runner's provider configuration.
type Config struct {
	// OllamaHost is the Ollama server, e.g. "http://127.0.0.1:11434" (the runner resolves OLLAMA_HOST).
	OllamaHost string
	// OpenAIKey is OPENAI_API_KEY; OpenAIBaseURL is OPENAI_BASE_URL, empty for OpenAI's own API.
	OpenAIKey, OpenAIBaseURL string
	// Skip names providers not to check (a test's scripted provider registered under a built-in's name).
	Skip []string
	// HTTPClient defaults to http.DefaultClient; Timeout bounds each check (default 3s).
	HTTPClient *http.Client
	Timeout    time.Duration
}

// Checker checks providers. It is safe for concurrent use.
type Checker struct{ cfg Config }

// New returns a Checker.
func New(cfg Config) *Checker {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 3 * time.Second
	}
	return &Checker{cfg: cfg}
}

const openAIDefaultBase = "https://api.openai.com/v1"

// Check reports what stands in the way of provider serving model: an errs.Invalid error naming the field "model"
// when the model cannot be used with that provider, an errs.Conflict error (FailedPrecondition) when the provider
// is not usable at all right now. Providers it knows nothing about pass.
func (c *Checker) Check(ctx context.Context, provider, model string) error {
	if slices.Contains(c.cfg.Skip, provider) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	switch provider {
	case memoryrules.AutopilotProvider:
		if model != "" && model != memoryrules.AutopilotProvider {
			return errs.InvalidField("model", "autopilot is Zoea's offline policy and runs no model, so model %q would be ignored; "+
				"leave the model unset, or choose --provider ollama or openai to use %q", model, model)
		}
		return nil
	case "ollama":
		return c.checkOllama(ctx, model)
	case "openai":
		return c.checkOpenAI(ctx, model)
	}
	return nil
}

func (c *Checker) get(ctx context.Context, u, bearer string, into any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	return resp.StatusCode, json.NewDecoder(resp.Body).Decode(into)
}

// reason shortens a transport error to what a person can act on.
func reason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer within the check's timeout"
	}
	return err.Error()
}

func (c *Checker) checkOllama(ctx context.Context, model string) error {
	host := strings.TrimRight(c.cfg.OllamaHost, "/")
	var tags struct {
		Models []struct {
			Name  string `json:"name"`
			Model string `json:"model"`
		} `json:"models"`
	}
	code, err := c.get(ctx, host+"/api/tags", "", &tags)
	if err != nil && code == 0 {
		return errs.Conflictf("provider ollama is not reachable at %s (%s): start it (ollama serve) or point OLLAMA_HOST of the runner at it", host, reason(err))
	}
	if err != nil || code != http.StatusOK {
		return errs.Conflictf("provider ollama at %s did not list its models (HTTP %d): is that an Ollama server?", host, code)
	}
	var have []string
	for _, m := range tags.Models {
		name := m.Name
		if name == "" {
			name = m.Model
		}
		have = append(have, name)
		if name == model || strings.TrimSuffix(name, ":latest") == model {
			return nil
		}
	}
	if len(have) == 0 {
		return errs.InvalidField("model", "ollama at %s has no models; pull one first (ollama pull %s)", host, model)
	}
	return errs.InvalidField("model", "ollama at %s has no model %q (it has %s); pull it first (ollama pull %s)", host, model, strings.Join(have, ", "), model)
}

func (c *Checker) checkOpenAI(ctx context.Context, model string) error {
	base := strings.TrimRight(c.cfg.OpenAIBaseURL, "/")
	if base == "" {
		base = openAIDefaultBase
		if c.cfg.OpenAIKey == "" {
			return errs.Conflictf("provider openai needs an API key: set OPENAI_API_KEY in the runner's environment " +
				"(or OPENAI_BASE_URL for an OpenAI-compatible server that needs none)")
		}
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	code, err := c.get(ctx, base+"/models", c.cfg.OpenAIKey, &list)
	switch {
	case err != nil && code == 0:
		return errs.Conflictf("provider openai is not reachable at %s (%s)", base, reason(err))
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		if c.cfg.OpenAIKey == "" {
			return errs.Conflictf("provider openai at %s wants an API key (HTTP %d): set OPENAI_API_KEY in the runner's environment", base, code)
		}
		return errs.Conflictf("provider openai at %s refused the runner's OPENAI_API_KEY (HTTP %d)", base, code)
	case err != nil || code != http.StatusOK || len(list.Data) == 0:
		return nil // a server that cannot list its models may still serve them: the first call will tell
	}
	var have []string
	for _, m := range list.Data {
		if m.ID == model {
			return nil
		}
		have = append(have, m.ID)
	}
	if len(have) > 12 {
		have = append(have[:12], fmt.Sprintf("… %d more", len(list.Data)-12))
	}
	return errs.InvalidField("model", "openai at %s has no model %q (it lists %s)", base, model, strings.Join(have, ", "))
}
