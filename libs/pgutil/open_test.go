package pgutil_test

import (
	"context"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/pgutil"
	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
)

// A pool's connections carry the application name Open was given (pg_stat_activity tells the services apart),
// unless the URL names its own.
func TestOpenNamesTheApplication(t *testing.T) {
	url := pgtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct{ url, app, want string }{
		{url, "zoea-memory", "zoea-memory"},
		{url + "&application_name=ops-console", "zoea-memory", "ops-console"},
	} {
		pool, err := pgutil.Open(ctx, c.url, c.app, 1)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		err = pool.QueryRow(ctx, "SELECT current_setting('application_name')").Scan(&got)
		pool.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Fatalf("Open(%q, %q): application_name %q, want %q", c.url, c.app, got, c.want)
		}
	}
}
