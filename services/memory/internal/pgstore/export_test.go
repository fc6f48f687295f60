package pgstore

import "github.com/zoeaswarm/zoea/services/memory/internal/memory"

// WindowSQL exposes the compose-window statement to the plan test.
func WindowSQL() string { return windowSQL }

// WindowArgs exposes its parameters for a query (normalised first).
func WindowArgs(q memory.WindowQuery) ([]any, error) {
	q, err := q.Normalize()
	if err != nil {
		return nil, err
	}
	return windowArgs(q), nil
}

// HeadlineOpts and SnippetInputChars let the search reference test compute snippets the way the service does.
const (
	HeadlineOpts      = headlineOpts
	SnippetInputChars = snippetInputChars
)
