package pgstore_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/pgutil"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// Runs of exclusion dashes once overflowed Postgres's tsquery operator stack ("tsquery stack too small" → Internal).
// Every hostile query now answers: hits or none, never an error; and a meaningful exclusion still excludes.
func TestSearchSurvivesOperatorFloods(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{user("iron ore in the belt"), assistant("copper ore at Haven")}))
	floods := []string{
		strings.Repeat("-", 33),
		strings.Repeat("-", 200) + "x",
		strings.Repeat("- ", 200) + "x",
		"ore " + strings.Repeat("-", 100) + "copper",
		`"iron"` + strings.Repeat("-", 40) + "b",
		"ore or -" + strings.Repeat("-", 40) + "b",
		strings.Repeat("-x ", 300),
		strings.Repeat(`"`, 300) + "ore",
		strings.Repeat("or ", 300) + "ore",
		"ore" + strings.Repeat("-", 300) + "iron",
	}
	for _, q := range floods {
		if _, err := s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: q}); err != nil {
			t.Errorf("query %.30q…: %v", q, err)
		}
		if _, err := s.SearchBroadcasts(ctx, memory.SearchQuery{Text: q}); err != nil {
			t.Errorf("broadcast query %.30q…: %v", q, err)
		}
		if _, err := s.SearchReasoning(ctx, memory.SearchQuery{MysisID: m.ID, Text: q}); err != nil {
			t.Errorf("reasoning query %.30q…: %v", q, err)
		}
	}
	// Parity is kept: three dashes exclude like one, two cancel out.
	hits := msgHits(t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "ore ---copper"}))
	if len(hits) != 1 || !strings.Contains(hits[0].Memory.Content, "iron") {
		t.Errorf("ore ---copper: %d hits, want only the iron one", len(hits))
	}
	// Words are optional (issue 42): "ore copper" finds both, the one holding both words first.
	hits = msgHits(t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "ore - - copper"}))
	if len(hits) != 2 || !strings.Contains(hits[0].Memory.Content, "copper") {
		t.Errorf("ore - - copper: %d hits, want the copper one first", len(hits))
	}
}

func TestBoundQueryOperators(t *testing.T) {
	for in, want := range map[string]string{
		"iron-ore":         "iron-ore",
		"a -b":             "a -b",
		"a --b":            "a b",
		"a ---b":           "a -b",
		"a - - - b":        "a -b",
		"---":              "",
		"x -":              "x -",
		"iron_ore -copper": "iron_ore -copper",
	} {
		if got := memory.BoundQueryOperators(in); strings.Join(strings.Fields(got), " ") != want {
			t.Errorf("BoundQueryOperators(%q) = %q, want %q", in, got, want)
		}
	}
}

// cutProxy forwards TCP to Postgres until cut: then every open connection is dropped the moment its client sends
// (what an immediate stop does mid-query: the client reads "unexpected EOF") and new connections are refused.
type cutProxy struct {
	lis    net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{lis: lis, target: target}
	t.Cleanup(func() { _ = lis.Close(); p.cutAll() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.cut {
				p.mu.Unlock()
				_ = c.Close()
				continue
			}
			p.mu.Unlock()
			go p.serve(c)
		}
	}()
	return p
}

func (p *cutProxy) serve(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c, up)
	p.mu.Unlock()
	go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if err != nil {
			_ = up.Close()
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			_ = c.Close()
			_ = up.Close()
			return
		}
		if _, err := up.Write(buf[:n]); err != nil {
			_ = c.Close()
			return
		}
	}
}

func (p *cutProxy) setCut(v bool) {
	p.mu.Lock()
	p.cut = v
	p.mu.Unlock()
}

func (p *cutProxy) cutAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// A dropped Postgres connection is Unavailable (retry later), never Internal; and the store heals by itself.
func TestDroppedConnectionIsUnavailable(t *testing.T) {
	ctx := context.Background()
	pool(t) // migrated
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startCutProxy(t, u.Host)
	u.Host = proxy.lis.Addr().String()
	p, err := pgutil.Open(ctx, u.String(), "zoea-test", 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	s := newSvcStore(p, testBox(t))
	m := mkMysis(t, s)
	if _, err := s.GetMysis(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	proxy.setCut(true) // open connections die on their next query ("unexpected EOF"), new ones are refused
	for i := range 3 {
		_, err := s.GetMysis(ctx, m.ID)
		wantKind(t, err, errs.Unavailable, "")
		if i == 0 {
			t.Logf("first error after the cut: %v", err)
		}
		_, err = s.AppendMemories(ctx, m.ID, []memory.NewMemory{user("during the outage")})
		wantKind(t, err, errs.Unavailable, "")
	}
	proxy.setCut(false)
	if _, err := s.AppendMemories(ctx, m.ID, []memory.NewMemory{user("after the outage")}); err != nil {
		t.Fatalf("the store did not heal: %v", err)
	}
}

// A broadcast from a mysis that does not exist is refused, naming the field; the commander (”) always may.
func TestRecordBroadcastUnknownSender(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	_, err := s.RecordBroadcast(ctx, memory.Broadcast{SenderID: memory.NewID(), Content: "from nobody"}, []string{m.ID})
	wantKind(t, err, errs.NotFound, "sender_id")
	if _, err := s.RecordBroadcast(ctx, memory.Broadcast{Content: "from the commander"}, []string{m.ID}); err != nil {
		t.Fatal(err)
	}
	d, err := s.RecordBroadcast(ctx, memory.Broadcast{SenderID: m.ID, Content: "from a mysis"}, []string{m.ID})
	if err != nil || d.Broadcast.SenderID != m.ID {
		t.Fatalf("%+v %v", d.Broadcast, err)
	}
}

// ListRecentMemories is bounded by bytes as well as rows: large rows shorten the answer (newest kept, at least one),
// small rows are unaffected.
func TestListRecentIsBoundedByBytes(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	big := strings.Repeat("x", 3<<20)
	for range 8 { // 24 MiB of tool results
		must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{toolResult("c", "get_map", big)}))
	}
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{user("small 1"), user("small 2")}))
	got := must[[]memory.Memory](t)(s.ListRecentMemories(ctx, m.ID, 1000))
	total := 0
	for _, r := range got {
		total += r.Bytes()
	}
	if total > memory.MaxResponseBytes || len(got) != 2+5 || got[len(got)-1].Content != "small 2" {
		t.Fatalf("%d rows, %d bytes; want the newest 7 rows within %d bytes", len(got), total, memory.MaxResponseBytes)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Seq != got[i-1].Seq+1 {
			t.Fatalf("not contiguous: seq %d after %d", got[i].Seq, got[i-1].Seq)
		}
	}
	if small := must[[]memory.Memory](t)(s.ListRecentMemories(ctx, m.ID, 2)); len(small) != 2 {
		t.Fatalf("limit 2: %d rows", len(small))
	}
	// The largest row the service takes (a tool result of MaxContentBytes) comes back: a reader always makes progress.
	n := mkMysis(t, s)
	huge := strings.Repeat("y", 8<<20)
	must[[]memory.Memory](t)(s.AppendMemories(ctx, n.ID, []memory.NewMemory{{Role: memory.RoleTool, Source: memory.SourceTool, ToolCallID: "c1", ToolName: "get_map", Content: huge}}))
	if one := must[[]memory.Memory](t)(s.ListRecentMemories(ctx, n.ID, 10)); len(one) != 1 {
		t.Fatalf("a single oversized row: %d rows", len(one))
	}
	// The Go helper agrees with the SQL bound.
	all := must[[]memory.Memory](t)(s.ListMemoriesRange(ctx, m.ID, 1, 0, 100))
	if kept := memory.KeepNewestWithin(all, memory.MaxResponseBytes); len(kept) != len(got) || kept[0].Seq != got[0].Seq {
		t.Fatalf("KeepNewestWithin kept %d rows from seq %d; SQL %d from %d", len(kept), kept[0].Seq, len(got), got[0].Seq)
	}
}
