package tools

import (
	"context"
	"testing"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/testsupport/memfake"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

// memAccounts is the Accounts port over the shared in-memory memory service (libs/testsupport/memfake, whose account
// pool passes the Accounts suite of libs/testsupport/memorycontract that the real service defines), reached over real gRPC: usernames,
// bindings, renewals and claims are the shared fake's, never this file's. The runner's real adapter, memoryclient,
// imports this package, so the four calls are converted here the way memoryclient converts them, errors through the
// gRPC status mapping (libs/server.FromStatus).
type memAccounts struct {
	mem    *memfake.Fake
	api    memoryv1.MemoryServiceClient
	seeded int // CreateAccount calls made by the test's setup
}

func newAccounts(t *testing.T) *memAccounts {
	t.Helper()
	f := memfake.Start(t)
	return &memAccounts{mem: f, api: f.Client(t)}
}

// mysis creates a mysis in the memory service and returns it as the router opens it, with the service's id.
func (a *memAccounts) mysis(t *testing.T, name string) mysis.Mysis {
	t.Helper()
	resp, err := a.api.CreateMysis(context.Background(), &memoryv1.CreateMysisRequest{Name: name, Provider: "autopilot", SystemPrompt: "You play SpaceMolt."})
	if err != nil {
		t.Fatalf("create mysis %s: %v", name, err)
	}
	return mysis.Mysis{ID: resp.GetMysis().GetId(), Name: name}
}

// pool stores an account as an operator or an earlier run would (bound when acct.MysisID is set); creates does not
// count it.
func (a *memAccounts) pool(t *testing.T, acct Account) {
	t.Helper()
	if err := a.CreateAccount(context.Background(), acct); err != nil {
		t.Fatalf("pool account %s: %v", acct.Username, err)
	}
	a.seeded++
}

// creates counts the CreateAccount calls of the code under test.
func (a *memAccounts) creates() int { return a.mem.Calls("CreateAccount") - a.seeded }

// stored is the pool as the memory service holds it, oldest first.
func (a *memAccounts) stored() []Account {
	var out []Account
	for _, acct := range a.mem.Accounts() {
		out = append(out, fromProtoAccount(acct))
	}
	return out
}

func fromProtoAccount(a *memoryv1.Account) Account {
	return Account{Username: a.GetUsername(), Password: a.GetPassword(), Empire: a.GetEmpire(), MysisID: a.GetMysisId()}
}

func (a *memAccounts) AccountForMysis(ctx context.Context, id string) (Account, error) {
	resp, err := a.api.GetAccountForMysis(ctx, &memoryv1.GetAccountForMysisRequest{MysisId: id})
	if err != nil {
		return Account{}, server.FromStatus(err)
	}
	return fromProtoAccount(resp.GetAccount()), nil
}

func (a *memAccounts) ClaimAccount(ctx context.Context, id string) (Account, error) {
	resp, err := a.api.ClaimAccount(ctx, &memoryv1.ClaimAccountRequest{MysisId: id})
	if err != nil {
		return Account{}, server.FromStatus(err)
	}
	return fromProtoAccount(resp.GetAccount()), nil
}

func (a *memAccounts) CreateAccount(ctx context.Context, acct Account) error {
	_, err := a.api.CreateAccount(ctx, &memoryv1.CreateAccountRequest{Username: acct.Username, Password: acct.Password, Empire: acct.Empire, MysisId: acct.MysisID})
	return server.FromStatus(err)
}

func (a *memAccounts) ReleaseAccount(ctx context.Context, id string) error {
	_, err := a.api.ReleaseAccount(ctx, &memoryv1.ReleaseAccountRequest{MysisId: id})
	return server.FromStatus(err)
}
