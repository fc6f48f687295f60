package migrations_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zoeaswarm/zoea/libs/pgutil"
	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
	"github.com/zoeaswarm/zoea/services/memory/internal/migrations"
)

func open(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	p, err := pgutil.Open(context.Background(), url, "zoea-test", 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func TestUpFromEmptyThenRerun(t *testing.T) {
	ctx := context.Background()
	p := open(t, pgtest.New(t))
	res, err := migrations.Up(ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 {
		t.Fatal("nothing applied to an empty database")
	}
	cur, latest, err := migrations.Version(ctx, p)
	if err != nil || cur != latest || cur != res[len(res)-1].Version {
		t.Fatalf("version %d/%d %v", cur, latest, err)
	}
	for _, table := range []string{"myses", "memories", "broadcasts", "accounts"} {
		var ok bool
		if err := p.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&ok); err != nil || !ok {
			t.Fatalf("table %s missing (%v)", table, err)
		}
	}
	// Data survives a re-run, which applies nothing.
	if _, err := p.Exec(ctx, `INSERT INTO myses (id, name, provider) VALUES (gen_random_uuid(), 'keep-me', 'autopilot')`); err != nil {
		t.Fatal(err)
	}
	again, err := migrations.Up(ctx, p, nil)
	if err != nil || len(again) != 0 {
		t.Fatalf("re-run applied %v (%v)", again, err)
	}
	var n int
	if err := p.QueryRow(ctx, `SELECT count(*) FROM myses`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("data lost on re-run: %d %v", n, err)
	}
}

func TestConcurrentMigratorsApplyOnce(t *testing.T) {
	ctx := context.Background()
	url := pgtest.New(t)
	const n = 4
	pools := make([]*pgxpool.Pool, n)
	for i := range pools {
		pools[i] = open(t, url)
	}
	applied := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := migrations.Up(ctx, pools[i], nil)
			if err != nil {
				t.Error(err)
			}
			applied[i] = len(res)
		})
	}
	wg.Wait()
	total := 0
	for _, a := range applied {
		total += a
	}
	// Counted from the files, not the latest version: numbers may have gaps while branches each take their own.
	files, err := filepath.Glob("sql/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migration files: %v %v", files, err)
	}
	if total != len(files) {
		t.Fatalf("migrations applied %v times in total across migrators, want each once (%d)", applied, len(files))
	}
}

func TestRefusesNewerDatabase(t *testing.T) {
	ctx := context.Background()
	p := open(t, pgtest.New(t))
	if _, err := migrations.Up(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, `INSERT INTO memory_schema_migrations (version_id, is_applied) VALUES (9999, true)`); err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.Up(ctx, p, nil); err == nil {
		t.Fatal("migrating a database from a newer binary succeeded")
	}
	var ok bool
	if err := p.QueryRow(ctx, `SELECT to_regclass('memories') IS NOT NULL`).Scan(&ok); err != nil || !ok {
		t.Fatal("tables gone after refusing")
	}
}
