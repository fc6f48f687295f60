package memfake

import (
	"context"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	rules "github.com/zoeaswarm/zoea/libs/memoryrules"
)

// validateAccount checks a login to add to the pool as the real service does (rules.ValidateAccount).
func validateAccount(req *memoryv1.CreateAccountRequest) error {
	return rules.ValidateAccount(rules.Account{Username: req.GetUsername(), Password: req.GetPassword(), Empire: req.GetEmpire()})
}

// withoutPassword is what CreateAccount answers: the account without its password.
func withoutPassword(a *memoryv1.Account) *memoryv1.Account {
	out := proto.Clone(a).(*memoryv1.Account)
	out.Password = ""
	return out
}

// heldLocked is the account a mysis holds, or nil; the caller holds f.mu.
func (f *Fake) heldLocked(mysisID string) *memoryv1.Account {
	for _, u := range f.acctOrder {
		if a := f.accounts[u]; a.GetMysisId() == mysisID {
			return a
		}
	}
	return nil
}

// bindLocked binds (mysisID != "") or unbinds an account and keeps the myses' account_username in step; the caller
// holds f.mu.
func (f *Fake) bindLocked(a *memoryv1.Account, mysisID string) {
	if old, ok := f.myses[a.GetMysisId()]; ok {
		old.AccountUsername = ""
	}
	a.MysisId = mysisID
	if m, ok := f.myses[mysisID]; ok {
		m.AccountUsername = a.GetUsername()
	}
	f.changedLocked()
}

// CreateAccount implements MemoryService.CreateAccount: usernames are unique, except that the mysis holding a
// username may store it again (a new password and empire); a mysis holds at most one account.
func (f *Fake) CreateAccount(_ context.Context, req *memoryv1.CreateAccountRequest) (*memoryv1.CreateAccountResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("CreateAccount"); ok {
		return nil, injected(fault)
	}
	if err := validateAccount(req); err != nil {
		return nil, err
	}
	mysisID := ""
	if req.GetMysisId() != "" {
		id, err := rules.ParseID("mysis_id", req.GetMysisId())
		if err != nil {
			return nil, err
		}
		mysisID = id
	}
	if a, ok := f.accounts[req.GetUsername()]; ok {
		if mysisID == "" || a.GetMysisId() != mysisID {
			return nil, &errs.Error{Kind: errs.Exists, Msg: "an account with this username already exists", Reason: errs.ReasonAccountUsernameTaken}
		}
		a.Password, a.Empire = req.GetPassword(), req.GetEmpire()
		f.changedLocked()
		return &memoryv1.CreateAccountResponse{Account: withoutPassword(a)}, nil
	}
	if mysisID != "" {
		if _, ok := f.myses[mysisID]; !ok {
			return nil, errs.NotFoundf("mysis not found")
		}
		if f.heldLocked(mysisID) != nil {
			return nil, &errs.Error{Kind: errs.Conflict, Msg: "the mysis already holds an account", Reason: errs.ReasonAccountAlreadyBound}
		}
	}
	a := &memoryv1.Account{Username: req.GetUsername(), Password: req.GetPassword(), Empire: req.GetEmpire(), CreatedAt: timestamppb.Now()}
	f.accounts[a.Username] = a
	f.acctOrder = append(f.acctOrder, a.Username)
	f.bindLocked(a, mysisID)
	return &memoryv1.CreateAccountResponse{Account: withoutPassword(a)}, nil
}

// ClaimAccount implements MemoryService.ClaimAccount: the account the mysis holds, else the oldest free one bound to
// it; NotFound when the pool has none free.
func (f *Fake) ClaimAccount(_ context.Context, req *memoryv1.ClaimAccountRequest) (*memoryv1.ClaimAccountResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("ClaimAccount"); ok {
		return nil, injected(fault)
	}
	m, err := f.mysisLocked(req.GetMysisId())
	if err != nil {
		return nil, err
	}
	if a := f.heldLocked(m.GetId()); a != nil {
		return &memoryv1.ClaimAccountResponse{Account: proto.Clone(a).(*memoryv1.Account)}, nil
	}
	for _, u := range f.acctOrder {
		if a := f.accounts[u]; a.GetMysisId() == "" {
			f.bindLocked(a, m.GetId())
			return &memoryv1.ClaimAccountResponse{Account: proto.Clone(a).(*memoryv1.Account)}, nil
		}
	}
	return nil, errs.NotFoundf("no free account in the pool")
}

// GetAccountForMysis implements MemoryService.GetAccountForMysis (NotFound when the mysis holds none).
func (f *Fake) GetAccountForMysis(_ context.Context, req *memoryv1.GetAccountForMysisRequest) (*memoryv1.GetAccountForMysisResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("GetAccountForMysis"); ok {
		return nil, injected(fault)
	}
	m, err := f.mysisLocked(req.GetMysisId())
	if err != nil {
		return nil, err
	}
	a := f.heldLocked(m.GetId())
	if a == nil {
		return nil, errs.NotFoundf("mysis %s holds no account", m.GetId())
	}
	return &memoryv1.GetAccountForMysisResponse{Account: proto.Clone(a).(*memoryv1.Account)}, nil
}

// ReleaseAccount implements MemoryService.ReleaseAccount: the username released, "" when the mysis held none.
func (f *Fake) ReleaseAccount(_ context.Context, req *memoryv1.ReleaseAccountRequest) (*memoryv1.ReleaseAccountResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("ReleaseAccount"); ok {
		return nil, injected(fault)
	}
	m, err := f.mysisLocked(req.GetMysisId())
	if err != nil {
		return nil, err
	}
	a := f.heldLocked(m.GetId())
	if a == nil {
		return &memoryv1.ReleaseAccountResponse{}, nil
	}
	f.bindLocked(a, "")
	return &memoryv1.ReleaseAccountResponse{Username: a.GetUsername()}, nil
}

// Accounts returns a copy of the account pool (with passwords) in the order the accounts were created.
func (f *Fake) Accounts() []*memoryv1.Account {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*memoryv1.Account, 0, len(f.acctOrder))
	for _, u := range f.acctOrder {
		out = append(out, proto.Clone(f.accounts[u]).(*memoryv1.Account))
	}
	return out
}
