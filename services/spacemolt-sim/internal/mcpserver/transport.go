package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// sessionNotInitializedBody is what the live server sends for an unknown or
// expired Mcp-Session-Id. The id is null because the request was never read;
// that also makes go-sdk clients report mcp.ErrSessionMissing, as for a bare 404.
const sessionNotInitializedBody = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Session not initialized"}}`

// sessionNotInitialized rewrites the SDK's plain-text 404 for unknown sessions
// into the live server's JSON-RPC error, keeping the 404 status.
//
// A POST without Mcp-Session-Id that is not a handshake (initialize or
// server/discover) is answered 400 with the same JSON-RPC error, instead of the
// SDK opening a throwaway session just to reject the call.
func sessionNotInitialized(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Session-Id") != "" {
			next.ServeHTTP(&notFoundWriter{ResponseWriter: w}, r)
			return
		}
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(io.LimitReader(r.Body, maxHandshakeBytes))
			_ = r.Body.Close()
			if err != nil {
				http.Error(w, "cannot read body", http.StatusBadRequest)
				return
			}
			if id, reject := needsSession(body); reject {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32600,"message":"Session not initialized"}}`))
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		next.ServeHTTP(w, r)
	})
}

// maxHandshakeBytes bounds how much of a session-less request is read.
const maxHandshakeBytes = 4 << 20

// needsSession reports whether a session-less JSON-RPC body holds a call that
// only an initialized session may make, and that call's id.
func needsSession(body []byte) (id json.RawMessage, reject bool) {
	type msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	var msgs []msg
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
		if json.Unmarshal(t, &msgs) != nil {
			return nil, false
		}
	} else {
		var m msg
		if json.Unmarshal(body, &m) != nil {
			return nil, false // let the SDK report the parse error
		}
		msgs = []msg{m}
	}
	for _, m := range msgs {
		if m.Method == "initialize" || m.Method == "server/discover" || strings.HasPrefix(m.Method, "notifications/") {
			return nil, false
		}
	}
	for _, m := range msgs {
		if len(m.ID) > 0 && m.Method != "" {
			return m.ID, true
		}
	}
	return nil, false
}

type notFoundWriter struct {
	http.ResponseWriter
	swallow bool
}

func (w *notFoundWriter) WriteHeader(code int) {
	if code == http.StatusNotFound && !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Del("X-Content-Type-Options")
		w.ResponseWriter.WriteHeader(code)
		_, _ = w.ResponseWriter.Write([]byte(sessionNotInitializedBody))
		w.swallow = true
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *notFoundWriter) Write(b []byte) (int, error) {
	if w.swallow {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Flush keeps SSE streaming working through the wrapper.
func (w *notFoundWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (w *notFoundWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
