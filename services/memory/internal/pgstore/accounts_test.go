package pgstore_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

func TestAccounts(t *testing.T) {
	ctx := context.Background()
	s, p := freshStore(t)
	a := mkMysis(t, s)
	b := mkMysis(t, s)
	c := mkMysis(t, s)

	const secret = "hunter2-correct-horse"
	created := must[memory.Account](t)(s.CreateAccount(ctx, memory.Account{Username: "pilot_a", Password: secret, Empire: "solarian"}))
	if created.Password != "" || created.MysisID != "" || created.CreatedAt.IsZero() {
		t.Fatalf("create echoes: %+v", created)
	}
	must[memory.Account](t)(s.CreateAccount(ctx, memory.Account{Username: "pilot_b", Password: "pw-b"}))
	_, err := s.CreateAccount(ctx, memory.Account{Username: "pilot_a", Password: "other"})
	wantKind(t, err, errs.Exists, "")
	_, err = s.CreateAccount(ctx, memory.Account{Username: "pilot_c", Password: "x", MysisID: memory.NewID()})
	wantKind(t, err, errs.NotFound, "")

	// The stored column holds no trace of the plaintext.
	var enc []byte
	if err := p.QueryRow(ctx, `SELECT password_enc FROM accounts WHERE username = 'pilot_a'`).Scan(&enc); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(enc, []byte(secret)) || bytes.Contains(enc, []byte("hunter2")) || len(enc) < len(secret)+12 {
		t.Fatalf("password stored in plain text or too short: %x", enc)
	}
	var asText string
	if err := p.QueryRow(ctx, `SELECT row_to_json(a)::text FROM accounts a WHERE username = 'pilot_a'`).Scan(&asText); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains([]byte(asText), []byte("hunter2")) {
		t.Fatalf("plaintext visible in row: %s", asText)
	}

	// Claim: oldest free account first, then the same one again for the same mysis.
	got := must[memory.Account](t)(s.ClaimAccount(ctx, a.ID))
	if got.Username != "pilot_a" || got.Password != secret || got.MysisID != a.ID || got.Empire != "solarian" {
		t.Fatalf("claim: %+v", got)
	}
	if again := must[memory.Account](t)(s.ClaimAccount(ctx, a.ID)); again.Username != "pilot_a" {
		t.Fatalf("claim again: %+v", again)
	}
	if gb := must[memory.Account](t)(s.ClaimAccount(ctx, b.ID)); gb.Username != "pilot_b" || gb.Password != "pw-b" {
		t.Fatalf("claim b: %+v", gb)
	}
	_, err = s.ClaimAccount(ctx, c.ID)
	wantKind(t, err, errs.NotFound, "")
	if m := must[memory.Mysis](t)(s.GetMysis(ctx, a.ID)); m.AccountUsername != "pilot_a" {
		t.Fatalf("mysis account username: %q", m.AccountUsername)
	}
	if fa := must[memory.Account](t)(s.GetAccountForMysis(ctx, a.ID)); fa.Password != secret {
		t.Fatalf("get for mysis: %+v", fa)
	}
	_, err = s.GetAccountForMysis(ctx, c.ID)
	wantKind(t, err, errs.NotFound, "")
	_, err = s.GetAccountForMysis(ctx, memory.NewID())
	wantKind(t, err, errs.NotFound, "")

	// Release, and deleting a mysis releases too.
	if u := must[string](t)(s.ReleaseAccount(ctx, a.ID)); u != "pilot_a" {
		t.Fatalf("release: %q", u)
	}
	if u := must[string](t)(s.ReleaseAccount(ctx, a.ID)); u != "" {
		t.Fatalf("release nothing: %q", u)
	}
	_, err = s.ReleaseAccount(ctx, memory.NewID())
	wantKind(t, err, errs.NotFound, "")
	if gc := must[memory.Account](t)(s.ClaimAccount(ctx, c.ID)); gc.Username != "pilot_a" {
		t.Fatalf("claim released: %+v", gc)
	}
	if err := s.DeleteMysis(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if ga := must[memory.Account](t)(s.ClaimAccount(ctx, a.ID)); ga.Username != "pilot_b" {
		t.Fatalf("claim after delete: %+v", ga)
	}

	// Bound at creation; a second account for the same mysis is a conflict.
	d := mkMysis(t, s)
	if bound := must[memory.Account](t)(s.CreateAccount(ctx, memory.Account{Username: "pilot_d", Password: "pw", MysisID: d.ID})); bound.MysisID != d.ID {
		t.Fatalf("bound: %+v", bound)
	}
	_, err = s.CreateAccount(ctx, memory.Account{Username: "pilot_e", Password: "pw", MysisID: d.ID})
	wantKind(t, err, errs.Conflict, "")

	// The mysis registering its own username again (the game forgot it) renews the password, keeping one row; the
	// same username for another mysis stays a conflict and leaves the password alone.
	must[memory.Account](t)(s.CreateAccount(ctx, memory.Account{Username: "pilot_d", Password: "pw-new", MysisID: d.ID}))
	if got := must[memory.Account](t)(s.GetAccountForMysis(ctx, d.ID)); got.Username != "pilot_d" || got.Password != "pw-new" {
		t.Fatalf("re-registration did not renew the password: %+v", got)
	}
	e := mkMysis(t, s)
	_, err = s.CreateAccount(ctx, memory.Account{Username: "pilot_d", Password: "stolen", MysisID: e.ID})
	wantKind(t, err, errs.Exists, "")
	if got := must[memory.Account](t)(s.GetAccountForMysis(ctx, d.ID)); got.Password != "pw-new" {
		t.Fatalf("another mysis overwrote the password: %+v", got)
	}

	// A wrong key cannot read, and says so without leaking anything.
	other := newSvcStore(p, testBox(t))
	_, err = other.GetAccountForMysis(ctx, d.ID)
	wantKind(t, err, errs.Conflict, "")

	// Without a key accounts fail clearly; everything else works.
	nokey := newSvcStore(p, nil)
	_, err = nokey.CreateAccount(ctx, memory.Account{Username: "pilot_f", Password: "pw"})
	wantKind(t, err, errs.Conflict, "")
	_, err = nokey.ClaimAccount(ctx, d.ID)
	wantKind(t, err, errs.Conflict, "")
	if _, err := nokey.GetMysis(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentClaimsTakeDistinctAccounts(t *testing.T) {
	ctx := context.Background()
	s, _ := freshStore(t)
	const n = 12
	var ids []string
	for i := range n {
		ids = append(ids, mkMysis(t, s).ID)
		must[memory.Account](t)(s.CreateAccount(ctx, memory.Account{Username: fmt.Sprintf("pool_%02d", i), Password: "pw"}))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	owner := map[string]string{}
	for _, id := range ids {
		for range 2 { // each mysis claims twice at once: it must get one account, not two
			wg.Go(func() {
				a, err := s.ClaimAccount(ctx, id)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if prev, ok := owner[a.Username]; ok && prev != id {
					t.Errorf("%s given to %s and %s", a.Username, prev, id)
				}
				owner[a.Username] = id
			})
		}
	}
	wg.Wait()
	if len(owner) != n {
		t.Fatalf("%d accounts claimed, want %d", len(owner), n)
	}
}

// TestReconnectsAfterBackendsAreKilled terminates every connection of the pool on the server side (what a
// Postgres restart does to a client) and checks the same pool serves again without being reopened.
func TestReconnectsAfterBackendsAreKilled(t *testing.T) {
	ctx := context.Background()
	s, p := freshStore(t)
	m := mkMysis(t, s)
	var db string
	if err := p.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	kill := func() {
		// A separate connection, so it does not kill itself before reporting. Only this role's sessions: an
		// autovacuum worker in the database belongs to no role, and an ordinary role may not end it.
		c, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Release()
		if _, err := c.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND usename = current_user AND pid <> pg_backend_pid()`, db); err != nil {
			t.Fatal(err)
		}
		// Then itself, so no connection of the pool survives.
		_, _ = c.Exec(ctx, `SELECT pg_terminate_backend(pg_backend_pid())`)
	}
	kill()
	// No waiting: a call that fails on a killed connection discards it (pgconn closes a connection on the FATAL
	// admin_shutdown its backend sends, the pool destroys closed connections on release, and pings one that sat
	// idle before handing it out), so at most MaxConns calls can fail before a freshly dialled connection answers.
	var err error
	attempts := int(p.Config().MaxConns) + 1
	for range attempts {
		if _, err = s.AppendMemories(ctx, m.ID, []memory.NewMemory{user("after restart")}); err == nil {
			break
		}
		if !errs.Is(err, errs.Unavailable) {
			t.Logf("error while reconnecting (not classified Unavailable): %v", err)
		}
	}
	if err != nil {
		t.Fatalf("pool did not recover in %d calls: %v", attempts, err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}
