package llm

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// ErrUnknownProvider is returned by Registry.Get for a name no provider was registered under; the runner maps it to
// InvalidArgument when a commander creates a mysis with such a provider.
var ErrUnknownProvider = errors.New("llm: unknown provider")

// Registry maps provider names (a mysis's "provider" field) to Providers. The runner's main builds it once from
// config, already wrapped with WithLimit and WithRetry; it is immutable afterwards, so actors share it without
// locks.
type Registry struct {
	byName map[string]Provider
}

// NewRegistry registers each provider under its Name. Empty or duplicate names are configuration mistakes and
// fail here rather than at a mysis's first turn.
func NewRegistry(providers ...Provider) (*Registry, error) {
	r := &Registry{byName: make(map[string]Provider, len(providers))}
	for _, p := range providers {
		if p == nil {
			return nil, errors.New("llm: nil provider")
		}
		name := p.Name()
		if name == "" {
			return nil, errors.New("llm: provider with an empty name")
		}
		if _, dup := r.byName[name]; dup {
			return nil, fmt.Errorf("llm: provider %q registered twice", name)
		}
		r.byName[name] = p
	}
	return r, nil
}

// Get returns the provider registered under name, or an error wrapping ErrUnknownProvider that lists the known
// names (a typo in a mysis's provider is then obvious from the message).
func (r *Registry) Get(name string) (Provider, error) {
	if p, ok := r.byName[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("%w %q (have %v)", ErrUnknownProvider, name, r.Names())
}

// Names lists the registered names, sorted.
func (r *Registry) Names() []string {
	return slices.Sorted(maps.Keys(r.byName))
}
