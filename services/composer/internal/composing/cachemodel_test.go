package composing

import (
	"testing"

	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// A mysis's compaction is priced with its own provider's cache model, unless the server's policy names one.
func TestCacheModelFromTheMysis(t *testing.T) {
	p := compose.DefaultPolicy()
	for _, c := range []struct {
		provider, model string
		want            compose.CacheModel
	}{
		{"ollama", "qwen3:8b", compose.CacheLocal}, {"openai", "gpt-4.1-mini", compose.CacheOpenAI},
		{"openai", "anthropic/claude-sonnet-4", compose.CacheAnthropic}, {"autopilot", "autopilot", compose.CacheNone},
	} {
		if got := WithCacheModel(p, Mysis{Known: true, Provider: c.provider, Model: c.model}).Cache; got != c.want {
			t.Errorf("%s/%s: %+v, want %s", c.provider, c.model, got, c.want.Name)
		}
	}
	named := p
	named.Cache = compose.CacheOpenAI
	if got := WithCacheModel(named, Mysis{Known: true, Provider: "ollama"}).Cache; got != compose.CacheOpenAI {
		t.Errorf("the server's cache model was replaced by %+v", got)
	}
	if got := WithCacheModel(p, Mysis{}).Cache; got.Name != "" {
		t.Errorf("no mysis: %+v", got)
	}
}
