package memorycontract

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
)

// The Accounts capability: the pool of SpaceMolt logins (CreateAccount, ClaimAccount, GetAccountForMysis,
// ReleaseAccount) as the real service answers it with its secret key set (services/memory/internal/pgstore
// accounts.go, memory.ValidateAccount).
//
// Usernames are unique (AlreadyExists, reason ACCOUNT_USERNAME_TAKEN) except that storing a username again for the
// mysis that holds it renews its password and empire; a mysis holds at most one account (FailedPrecondition, reason
// ACCOUNT_ALREADY_BOUND). Passwords come back only from ClaimAccount and GetAccountForMysis. ClaimAccount returns the
// account a mysis holds, or binds a free one; GetAccountForMysis is NotFound when the mysis holds none;
// ReleaseAccount returns the username it unbound, "" (no error) when there was none. A mysis's account_username is
// the account it holds.
//
// The pool is shared by every caller of a service, so the cases never assume which free account a claim takes (the
// oldest; another test may have left one) or that the pool is ever empty.

// uniqueUser is a valid username (3–24 characters) no other test uses.
func uniqueUser(prefix string) string { return prefix + "_" + uuid.NewString()[:8] }

func reasonOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if r, ok := d.(interface{ GetReason() string }); ok && r.GetReason() != "" {
			return r.GetReason()
		}
	}
	return ""
}

func wantReason(t *testing.T, what string, err error, code codes.Code, reason string) {
	t.Helper()
	if status.Code(err) != code || reasonOf(err) != reason {
		t.Errorf("%s: %v (reason %q), want %v with reason %s", what, err, reasonOf(err), code, reason)
	}
}

func accountOf(t *testing.T, c memoryv1.MemoryServiceClient, mysisID string) *memoryv1.Account {
	t.Helper()
	resp, err := c.GetAccountForMysis(ctxT(t), &memoryv1.GetAccountForMysisRequest{MysisId: mysisID})
	if err != nil {
		t.Fatalf("GetAccountForMysis: %v", err)
	}
	return resp.GetAccount()
}

func usernameOf(t *testing.T, c memoryv1.MemoryServiceClient, mysisID string) string {
	t.Helper()
	resp, err := c.GetMysis(ctxT(t), &memoryv1.GetMysisRequest{MysisId: mysisID})
	if err != nil {
		t.Fatalf("GetMysis: %v", err)
	}
	return resp.GetMysis().GetAccountUsername()
}

func testCreateBoundAccount(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	a, b := newMysis(t, c, uniqueName("acct")), newMysis(t, c, uniqueName("acct"))
	user := uniqueUser("pilot")
	resp, err := c.CreateAccount(ctx, &memoryv1.CreateAccountRequest{Username: user, Password: "s3cret", Empire: "solarian", MysisId: a.GetId()})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetAccount(); got.GetUsername() != user || got.GetEmpire() != "solarian" || got.GetMysisId() != a.GetId() || got.GetPassword() != "" {
		t.Errorf("CreateAccount = %v; want the account bound to the mysis, without its password", got)
	}
	if got := accountOf(t, c, a.GetId()); got.GetUsername() != user || got.GetPassword() != "s3cret" || got.GetMysisId() != a.GetId() {
		t.Errorf("GetAccountForMysis = %v; want the account with its password", got)
	}
	if u := usernameOf(t, c, a.GetId()); u != user {
		t.Errorf("account_username = %q, want %q", u, user)
	}
	// The mysis holding it may store it again: a new password and empire.
	if _, err := c.CreateAccount(ctx, &memoryv1.CreateAccountRequest{Username: user, Password: "n3w", Empire: "nebula", MysisId: a.GetId()}); err != nil {
		t.Fatalf("renewing the password of the mysis's own account: %v", err)
	}
	if got := accountOf(t, c, a.GetId()); got.GetPassword() != "n3w" || got.GetEmpire() != "nebula" {
		t.Errorf("after a renewal: %v; want the new password and empire", got)
	}
	// Anyone else storing the username is refused, and so is a second account for the mysis.
	_, err = c.CreateAccount(ctx, &memoryv1.CreateAccountRequest{Username: user, Password: "x", MysisId: b.GetId()})
	wantReason(t, "the username for another mysis", err, codes.AlreadyExists, errs.ReasonAccountUsernameTaken)
	_, err = c.CreateAccount(ctx, &memoryv1.CreateAccountRequest{Username: user, Password: "x"})
	wantReason(t, "the username unbound", err, codes.AlreadyExists, errs.ReasonAccountUsernameTaken)
	_, err = c.CreateAccount(ctx, &memoryv1.CreateAccountRequest{Username: uniqueUser("second"), Password: "x", MysisId: a.GetId()})
	wantReason(t, "a second account for the mysis", err, codes.FailedPrecondition, errs.ReasonAccountAlreadyBound)
	if got := accountOf(t, c, a.GetId()); got.GetUsername() != user || got.GetPassword() != "n3w" {
		t.Errorf("after refused creates: %v; want the renewed account", got)
	}
	// A mysis that holds an account gets it back from a claim.
	claim, err := c.ClaimAccount(ctx, &memoryv1.ClaimAccountRequest{MysisId: a.GetId()})
	if err != nil || claim.GetAccount().GetUsername() != user || claim.GetAccount().GetPassword() != "n3w" {
		t.Errorf("ClaimAccount for the holder = %v, %v; want its own account", claim.GetAccount(), err)
	}
	if _, err := c.GetAccountForMysis(ctx, &memoryv1.GetAccountForMysisRequest{MysisId: b.GetId()}); status.Code(err) != codes.NotFound {
		t.Errorf("GetAccountForMysis of a mysis holding none: %v, want NotFound", err)
	}
}

func testClaimAndRelease(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	m := newMysis(t, c, uniqueName("claim"))
	user := uniqueUser("pool")
	created, err := c.CreateAccount(ctx, &memoryv1.CreateAccountRequest{Username: user, Password: "pw-" + user, Empire: "voidborn"})
	if err != nil {
		t.Fatal(err)
	}
	if created.GetAccount().GetMysisId() != "" || created.GetAccount().GetPassword() != "" {
		t.Errorf("a pooled account = %v; want it free and without its password", created.GetAccount())
	}
	resp, err := c.ClaimAccount(ctx, &memoryv1.ClaimAccountRequest{MysisId: m.GetId()})
	if err != nil {
		t.Fatalf("ClaimAccount with a free account in the pool: %v", err)
	}
	got := resp.GetAccount()
	if got.GetMysisId() != m.GetId() || got.GetUsername() == "" || got.GetPassword() == "" {
		t.Fatalf("claimed %v; want an account bound to the mysis, with its password", got)
	}
	if got.GetUsername() == user && (got.GetPassword() != "pw-"+user || got.GetEmpire() != "voidborn") {
		t.Errorf("claimed the pooled account as %v; want its stored password and empire", got)
	}
	if held := accountOf(t, c, m.GetId()); held.GetUsername() != got.GetUsername() || held.GetPassword() != got.GetPassword() {
		t.Errorf("GetAccountForMysis = %v, want the claimed %v", held, got)
	}
	if u := usernameOf(t, c, m.GetId()); u != got.GetUsername() {
		t.Errorf("account_username = %q, want %q", u, got.GetUsername())
	}
	// A second claim returns the same account.
	again, err := c.ClaimAccount(ctx, &memoryv1.ClaimAccountRequest{MysisId: m.GetId()})
	if err != nil || again.GetAccount().GetUsername() != got.GetUsername() {
		t.Errorf("a second claim = %v, %v; want the held %s", again.GetAccount(), err, got.GetUsername())
	}

	rel, err := c.ReleaseAccount(ctx, &memoryv1.ReleaseAccountRequest{MysisId: m.GetId()})
	if err != nil || rel.GetUsername() != got.GetUsername() {
		t.Errorf("ReleaseAccount = %v, %v; want %s released", rel, err, got.GetUsername())
	}
	_, err = c.GetAccountForMysis(ctx, &memoryv1.GetAccountForMysisRequest{MysisId: m.GetId()})
	wantCode(t, "GetAccountForMysis after the release", err, codes.NotFound)
	if u := usernameOf(t, c, m.GetId()); u != "" {
		t.Errorf("account_username after the release = %q, want empty", u)
	}
	rel, err = c.ReleaseAccount(ctx, &memoryv1.ReleaseAccountRequest{MysisId: m.GetId()})
	if err != nil || rel.GetUsername() != "" {
		t.Errorf("releasing nothing = %v, %v; want no error and no username", rel, err)
	}
	// The released account is free: it cannot be created again, but a mysis may claim an account again.
	if _, err := c.ClaimAccount(ctx, &memoryv1.ClaimAccountRequest{MysisId: m.GetId()}); err != nil {
		t.Errorf("a claim after the release (at least the released account is free): %v", err)
	}
}

func testAccountRejects(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	m := newMysis(t, c, uniqueName("acctbad"))
	create := func(r *memoryv1.CreateAccountRequest) error {
		_, err := c.CreateAccount(ctx, r)
		return err
	}
	wantInvalid(t, "no username", create(&memoryv1.CreateAccountRequest{Password: "pw"}), "username")
	wantInvalid(t, "a 2-character username", create(&memoryv1.CreateAccountRequest{Username: "ab", Password: "pw"}), "username")
	wantInvalid(t, "a 25-character username", create(&memoryv1.CreateAccountRequest{Username: strings.Repeat("a", 25), Password: "pw"}), "username")
	wantInvalid(t, "a username with outer spaces", create(&memoryv1.CreateAccountRequest{Username: " pilot", Password: "pw"}), "username")
	wantInvalid(t, "no password", create(&memoryv1.CreateAccountRequest{Username: uniqueUser("nopw"), MysisId: m.GetId()}), "password")
	wantInvalid(t, "a NUL byte in the password", create(&memoryv1.CreateAccountRequest{Username: uniqueUser("nul"), Password: "p\x00w"}), "password")
	wantInvalid(t, "a malformed mysis id", create(&memoryv1.CreateAccountRequest{Username: uniqueUser("badid"), Password: "pw", MysisId: "nope"}), "mysis_id")
	wantCode(t, "an unknown mysis", create(&memoryv1.CreateAccountRequest{Username: uniqueUser("ghost"), Password: "pw", MysisId: uuid.NewString()}), codes.NotFound)

	for _, call := range []struct {
		name string
		do   func(id string) error
	}{
		{"ClaimAccount", func(id string) error {
			_, err := c.ClaimAccount(ctx, &memoryv1.ClaimAccountRequest{MysisId: id})
			return err
		}},
		{"GetAccountForMysis", func(id string) error {
			_, err := c.GetAccountForMysis(ctx, &memoryv1.GetAccountForMysisRequest{MysisId: id})
			return err
		}},
		{"ReleaseAccount", func(id string) error {
			_, err := c.ReleaseAccount(ctx, &memoryv1.ReleaseAccountRequest{MysisId: id})
			return err
		}},
	} {
		wantInvalid(t, call.name+" with a malformed mysis id", call.do("nope"), "mysis_id")
		wantCode(t, call.name+" for an unknown mysis", call.do(uuid.NewString()), codes.NotFound)
	}
	// Nothing refused was bound to the mysis.
	_, err := c.GetAccountForMysis(ctx, &memoryv1.GetAccountForMysisRequest{MysisId: m.GetId()})
	wantCode(t, "the mysis after refused creates", err, codes.NotFound)
}
