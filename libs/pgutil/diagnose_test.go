package pgutil_test

import (
	"context"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/libs/pgutil"
	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
)

func connectErr(t *testing.T, raw string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, raw)
	if err == nil {
		conn.Close(ctx)
		t.Fatalf("connect %s unexpectedly succeeded", raw)
	}
	return err
}

// TestDiagnoseNamesTheCause connects to the real local server in the ways a new user gets wrong and checks each
// failure is named for what it is, with the advice and without the password.
func TestDiagnoseNamesTheCause(t *testing.T) {
	admin, err := url.Parse(pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	with := func(user, pass, db string) string {
		u := *admin
		u.User = url.UserPassword(user, pass)
		u.Path = "/" + db
		return u.String()
	}

	// A port nobody listens on: take a free one and close it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()

	// The admin role with its own password, asking for a database nobody made.
	db := *admin
	db.Path = "/zt_no_such_database"
	missingDB := db.String()

	cases := []struct {
		name string
		url  string
		want pgutil.Problem
		says string
	}{
		{"not listening", "postgres://zoea:s3cret-pw@" + closed + "/zoea?sslmode=disable", pgutil.ProblemNotListening, "nothing listens at " + closed},
		{"database missing", missingDB, pgutil.ProblemDatabaseMissing, `no database "zt_no_such_database"`},
	}
	// Whether a missing role reads as "refused" or "password failed" depends on the server's pg_hba: trust names the
	// missing role, scram answers every unknown role with a password failure so as not to reveal which exist.
	missingRole := pgutil.ProblemRoleRefused
	if pgutil.Diagnose(connectErr(t, with("zt_no_such_role", "s3cret-pw", "postgres"))) == pgutil.ProblemAuthFailed {
		missingRole = pgutil.ProblemAuthFailed
	}
	cases = append(cases, struct {
		name string
		url  string
		want pgutil.Problem
		says string
	}{"role missing", with("zt_no_such_role", "s3cret-pw", "postgres"), missingRole, `role "zt_no_such_role"`})

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := connectErr(t, c.url)
			if got := pgutil.Diagnose(err); got != c.want {
				t.Fatalf("Diagnose = %v, want %v (%v)", got, c.want, err)
			}
			msg := pgutil.ExplainConnect(err, c.url, "sudo bash .ci/services.sh").Error()
			if !strings.Contains(msg, c.says) || !strings.Contains(msg, ".ci/services.sh") {
				t.Fatalf("explanation lacks %q or the advice: %s", c.says, msg)
			}
			if strings.Contains(msg, "s3cret-pw") {
				t.Fatalf("password leaked: %s", msg)
			}
			// With no set-up command to name (a server someone else runs) the cause and the advice stay sentences.
			bare := pgutil.ExplainConnect(err, c.url, "").Error()
			if !strings.Contains(bare, c.says) || strings.Contains(bare, "()") || strings.Contains(bare, "run ,") {
				t.Fatalf("explanation without a set-up command: %s", bare)
			}
		})
	}
}

func TestDiagnoseOtherErrors(t *testing.T) {
	if got := pgutil.Diagnose(context.DeadlineExceeded); got != pgutil.ProblemOther {
		t.Fatalf("a deadline is not a diagnosis: %v", got)
	}
}
