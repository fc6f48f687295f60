package grpcapi_test

import (
	"context"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/server"
)

func reasonOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == server.ErrorDomain {
			return info.GetReason()
		}
	}
	return ""
}

// Clients switch on the ErrorInfo reason (docs/ERRORS.md), not on message text: each specific cause arrives.
func TestErrorInfoReasons(t *testing.T) {
	ctx := context.Background()
	c, _ := start(t, dbURL, true)
	m, err := c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{SystemPrompt: "You are a mysis.", Name: "reasons", Provider: "autopilot"})
	if err != nil {
		t.Fatal(err)
	}
	id := m.GetMysis().GetId()
	_, err = c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{SystemPrompt: "You are a mysis.", Name: "reasons", Provider: "autopilot"})
	if got := reasonOf(err); got != errs.ReasonMysisNameTaken {
		t.Errorf("duplicate name: reason %q, want %q (%v)", got, errs.ReasonMysisNameTaken, err)
	}
	_, err = c.SetMysisState(ctx, &memoryv1.SetMysisStateRequest{MysisId: id, State: memoryv1.MysisState_MYSIS_STATE_RUNNING,
		ExpectedState: memoryv1.MysisState_MYSIS_STATE_ERRORED})
	if got := reasonOf(err); got != errs.ReasonStateChanged {
		t.Errorf("lost compare-and-set: reason %q, want %q (%v)", got, errs.ReasonStateChanged, err)
	}
	if _, err := c.CreateAccount(ctx, &memoryv1.CreateAccountRequest{Username: "pilot_reasons", Password: "pw", MysisId: id}); err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateAccount(ctx, &memoryv1.CreateAccountRequest{Username: "pilot_reasons", Password: "pw"})
	if got := reasonOf(err); got != errs.ReasonAccountUsernameTaken {
		t.Errorf("duplicate username: reason %q, want %q (%v)", got, errs.ReasonAccountUsernameTaken, err)
	}
	_, err = c.CreateAccount(ctx, &memoryv1.CreateAccountRequest{Username: "pilot_reasons2", Password: "pw", MysisId: id})
	if got := reasonOf(err); got != errs.ReasonAccountAlreadyBound {
		t.Errorf("second account for a mysis: reason %q, want %q (%v)", got, errs.ReasonAccountAlreadyBound, err)
	}

	nokey, _ := start(t, dbURL, false)
	_, err = nokey.CreateAccount(ctx, &memoryv1.CreateAccountRequest{Username: "pilot_nokey", Password: "pw"})
	if got := reasonOf(err); got != errs.ReasonSecretKeyMissing {
		t.Errorf("no secret key: reason %q, want %q (%v)", got, errs.ReasonSecretKeyMissing, err)
	}
}
