package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// newRawSession speaks Streamable HTTP by hand: initialize, initialized, then
// one POST per tools/call, reading the SSE or JSON answer. It costs far less
// CPU than the SDK client, so the load lands on the server.
func newRawSession(ctx context.Context, hc *http.Client, url string) (*session, error) {
	r := &rawClient{hc: hc, url: url}
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"simload-raw","version":"1"}}}`
	resp, body, err := r.post(ctx, []byte(init))
	if err != nil {
		return nil, err
	}
	r.id = resp.Header.Get("Mcp-Session-Id")
	if r.id == "" || !bytes.Contains(body, []byte(`"result"`)) {
		return nil, fmt.Errorf("initialize: HTTP %d %s", resp.StatusCode, body)
	}
	if resp, _, err = r.post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		return nil, err
	} else if resp.StatusCode != http.StatusAccepted {
		return nil, fmt.Errorf("initialized: HTTP %d", resp.StatusCode)
	}
	return &session{call: r.call, close: r.close}, nil
}

type rawClient struct {
	hc  *http.Client
	url string
	id  string
	seq atomic.Int64
}

func (r *rawClient) post(ctx context.Context, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if r.id != "" {
		req.Header.Set("Mcp-Session-Id", r.id)
		req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func (r *rawClient) call(ctx context.Context, tool string, args map[string]any) (string, error) {
	a, err := json.Marshal(args)
	if err != nil {
		return "", err
	}
	if args == nil {
		a = []byte("{}")
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, r.seq.Add(1), tool, a)
	resp, b, err := r.post(ctx, []byte(body))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b = sseData(b)
	}
	var msg struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &msg); err != nil {
		return "", fmt.Errorf("decode %q: %w", b, err)
	}
	if msg.Error != nil {
		return "", errors.New(msg.Error.Message)
	}
	if len(msg.Result.Content) != 1 {
		return "", fmt.Errorf("want 1 content item: %s", b)
	}
	if msg.Result.IsError {
		return "", gameError(msg.Result.Content[0].Text)
	}
	return msg.Result.Content[0].Text, nil
}

// sseData returns the data of the first SSE event in b.
func sseData(b []byte) []byte {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		if line := sc.Bytes(); bytes.HasPrefix(line, []byte("data:")) {
			return bytes.TrimSpace(line[5:])
		}
	}
	return nil
}

func (r *rawClient) close() {
	req, err := http.NewRequest(http.MethodDelete, r.url, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", r.id)
	if resp, err := r.hc.Do(req); err == nil {
		resp.Body.Close()
	}
}

// cpuTime is the process's user+system CPU so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
