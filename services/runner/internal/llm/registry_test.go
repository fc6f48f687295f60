package llm

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

type named string

func (n named) Name() string                                    { return string(n) }
func (n named) Chat(context.Context, Request) (Response, error) { return Response{}, nil }

func TestRegistry(t *testing.T) {
	r, err := NewRegistry(named("openai"), WithLimit(named("ollama"), 2), named("autopilot"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Names(), []string{"autopilot", "ollama", "openai"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	p, err := r.Get("ollama")
	if err != nil || p.Name() != "ollama" {
		t.Fatalf("Get(ollama) = %v, %v", p, err)
	}
	if _, err := r.Get("olama"); !errors.Is(err, ErrUnknownProvider) {
		t.Fatalf("Get(olama) err = %v, want ErrUnknownProvider", err)
	}
}

func TestNewRegistryRejects(t *testing.T) {
	for name, ps := range map[string][]Provider{
		"duplicate": {named("ollama"), named("ollama")},
		"empty":     {named("")},
		"nil":       {nil},
	} {
		if _, err := NewRegistry(ps...); err == nil {
			t.Errorf("%s: NewRegistry succeeded", name)
		}
	}
}
