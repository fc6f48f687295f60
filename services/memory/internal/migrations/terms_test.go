package migrations_test

import (
	"context"
	"testing"

	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/migrations"
)

// TestSearchTermsQueueExistingMemories migrates a database with memories written at schema v16 and checks 00017
// queued exactly the memories that have a vector (a tool result the indexer had not reached is queued when it is
// indexed, not now), once, and wrote nothing into memories.
func TestSearchTermsQueueExistingMemories(t *testing.T) {
	ctx := context.Background()
	p := open(t, pgtest.New(t))
	if err := migrations.UpTo(ctx, p, 16); err != nil {
		t.Fatal(err)
	}
	id := memory.NewID()
	if _, err := p.Exec(ctx, `INSERT INTO myses (id, name, provider) VALUES ($1, 'old', 'autopilot')`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, `INSERT INTO memories (mysis_id, seq, turn, role, source, content, content_tsv)
		SELECT $1, g, 1, CASE WHEN g % 3 = 0 THEN 4 ELSE 2 END, CASE WHEN g % 3 = 0 THEN 5 ELSE 1 END, 'ore number ' || g,
			CASE WHEN g = 9 THEN NULL ELSE to_tsvector('english', 'ore number ' || g) END
		FROM generate_series(1, 30) g`, id); err != nil {
		t.Fatal(err)
	}
	var before string
	if err := p.QueryRow(ctx, `SELECT string_agg(xmin::text, ',' ORDER BY seq) FROM memories`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.Up(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	var queued, distinct, missing int
	var after string
	if err := p.QueryRow(ctx, `SELECT count(*), count(DISTINCT memory_id),
			(SELECT count(*) FROM memories m WHERE m.content_tsv IS NOT NULL AND NOT EXISTS (SELECT 1 FROM memory_terms_queue q WHERE q.memory_id = m.id)),
			(SELECT string_agg(xmin::text, ',' ORDER BY seq) FROM memories)
		FROM memory_terms_queue`).Scan(&queued, &distinct, &missing, &after); err != nil {
		t.Fatal(err)
	}
	if queued != 29 || distinct != 29 || missing != 0 {
		t.Fatalf("queued %d (%d distinct, %d indexed memories missing), want 29", queued, distinct, missing)
	}
	if before != after {
		t.Fatalf("the migration rewrote memories")
	}
}
