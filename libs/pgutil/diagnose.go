package pgutil

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
)

// Problem names why a connection to Postgres failed, so a person gets the cause rather than "not answering".
type Problem int

// The causes Diagnose tells apart.
const (
	ProblemOther           Problem = iota // anything else: the server's own message says more
	ProblemNotListening                   // nothing accepts connections at the address
	ProblemAuthFailed                     // the server asked for a password and refused the one given (or none)
	ProblemRoleRefused                    // the role does not exist, or pg_hba.conf has no entry for it from here
	ProblemDatabaseMissing                // the server answered, but the database does not exist
)

func (p Problem) String() string {
	switch p {
	case ProblemNotListening:
		return "not listening"
	case ProblemAuthFailed:
		return "authentication failed"
	case ProblemRoleRefused:
		return "role refused"
	case ProblemDatabaseMissing:
		return "database missing"
	}
	return "other"
}

// Diagnose classifies a connection error by its SQLSTATE (the server answered) or its network error (it did not).
func Diagnose(err error) Problem {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case pgerrcode.InvalidPassword:
			return ProblemAuthFailed
		case pgerrcode.InvalidAuthorizationSpecification:
			return ProblemRoleRefused
		case pgerrcode.InvalidCatalogName:
			return ProblemDatabaseMissing
		}
		return ProblemOther
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) {
		return ProblemNotListening
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	if errors.As(err, &dnsErr) || (errors.As(err, &opErr) && opErr.Timeout()) {
		return ProblemNotListening
	}
	return ProblemOther
}

// ExplainConnect turns a failed connection to rawURL into a sentence naming the cause and what to do; setup is the
// command that prepares a local server (for example "sudo bash .ci/services.sh"), or "" where there is none to name
// (a server someone else runs). The password is never shown.
func ExplainConnect(err error, rawURL, setup string) error {
	host, role, db := "(unparseable url)", "", ""
	if u, perr := url.Parse(rawURL); perr == nil {
		host, role, db = u.Host, u.User.Username(), strings.TrimPrefix(u.Path, "/")
	}
	var what string
	switch Diagnose(err) {
	case ProblemNotListening:
		start := "start Postgres"
		if setup != "" {
			start = fmt.Sprintf("start Postgres (%s does it)", setup)
		}
		what = fmt.Sprintf("nothing listens at %s: %s, or point ZOEA_DATABASE_URL at a running server", host, start)
	case ProblemAuthFailed:
		fix := "create the role or set its password"
		if setup != "" {
			fix = fmt.Sprintf("run %s to create role zoea with password zoea", setup)
		}
		what = fmt.Sprintf("Postgres at %s refused the password of role %q (wrong password, or the role does not exist): "+
			"%s, or fix the user and password in ZOEA_DATABASE_URL", host, role, fix)
	case ProblemRoleRefused:
		fix := "create the role (or allow it in pg_hba.conf)"
		if setup != "" {
			fix = fmt.Sprintf("run %s to create role zoea", setup)
		}
		what = fmt.Sprintf("Postgres at %s refused role %q (it does not exist, or pg_hba.conf allows it no connection from here): "+
			"%s, or fix the user in ZOEA_DATABASE_URL", host, role, fix)
	case ProblemDatabaseMissing:
		run := ""
		if setup != "" {
			run = fmt.Sprintf("run %s, or ", setup)
		}
		what = fmt.Sprintf("Postgres at %s has no database %q: %screate it (createdb -O %s %s)", host, db, run, role, db)
	default:
		what = fmt.Sprintf("cannot connect to Postgres at %s", host)
	}
	return &ConnectError{Problem: Diagnose(err), msg: what, err: err}
}

// ConnectError is what ExplainConnect returns: the cause in words, with the driver's error underneath.
type ConnectError struct {
	Problem Problem
	msg     string
	err     error
}

func (e *ConnectError) Error() string { return e.msg + "\n  (" + e.err.Error() + ")" }
func (e *ConnectError) Unwrap() error { return e.err }
