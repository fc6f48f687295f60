package mcpserver

import (
	"encoding/json"
	"errors"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
)

func nopLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// toResultV2 renders a game answer the v2 way: the answer as structuredContent and a rendering of it as text. The
// live server's text is its own prose rendering; the simulator's is the same data as YAML (block style, fields in
// the order of the JSON), which a model reads as easily and which costs fewer tokens than the JSON (measured in
// docs/BENCHMARKS.md). Errors keep the legacy "Error: code: message" text and add the code and the waits as
// structuredContent.error.
func toResultV2(res any, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		var ge *game.Error
		if !errors.As(err, &ge) {
			return nil, err
		}
		detail := map[string]any{"code": ge.Code, "message": ge.Message}
		if ge.RetryAfter > 0 {
			detail["retry_after"] = ge.RetryAfter
			detail["wait_seconds"] = ge.RetryAfter
		}
		if ge.SecondsRemaining > 0 {
			detail["seconds_remaining"] = ge.SecondsRemaining
			detail["wait_seconds"] = ge.SecondsRemaining
		}
		return &mcp.CallToolResult{
			IsError:           true,
			Content:           []mcp.Content{&mcp.TextContent{Text: "Error: " + ge.Code + ": " + ge.Message}},
			StructuredContent: map[string]any{"error": detail},
		}, nil
	}
	if a, ok := res.(*v2Answer); ok {
		b, err := json.Marshal(a.state)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.text}}, StructuredContent: json.RawMessage(b)}, nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	text, err := RenderText(b)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: json.RawMessage(b),
	}, nil
}

// RenderText renders a JSON document as block YAML with the keys in document order; sequences of scalars stay on
// one line ([a, b]).
func RenderText(doc []byte) (string, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(doc, &n); err != nil {
		return "", err
	}
	restyle(&n)
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return b.String(), nil
}

func restyle(n *yaml.Node) {
	n.Style = 0
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && n.Value == "" {
		n.Style = yaml.DoubleQuotedStyle
	}
	scalars := true
	for _, c := range n.Content {
		restyle(c)
		if c.Kind != yaml.ScalarNode {
			scalars = false
		}
	}
	if n.Kind == yaml.SequenceNode && scalars {
		n.Style = yaml.FlowStyle
	}
}
