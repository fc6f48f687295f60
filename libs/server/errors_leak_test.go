package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/redact"
)

// Causes never reach a caller: a store's error carries the driver's text (constraint names, SQLSTATE) as its cause.
func TestToStatusHidesCauses(t *testing.T) {
	cause := errors.New(`ERROR: duplicate key value violates unique constraint "myses_name_key" (SQLSTATE 23505)`)
	log := slog.New(slog.DiscardHandler)
	for _, e := range []*errs.Error{
		{Kind: errs.Exists, Msg: "a mysis with this name already exists", Err: cause},
		{Kind: errs.NotFound, Msg: "mysis not found", Err: fmt.Errorf(`violates foreign key constraint "accounts_mysis_id_fkey": %w`, cause)},
		{Kind: errs.Conflict, Msg: "the mysis already holds an account", Err: cause},
		{Kind: errs.Unavailable, Msg: "database unavailable", Err: cause},
		{Kind: errs.Invalid, Field: "name", Msg: "already taken", Err: cause},
	} {
		st := status.Convert(ToStatus(context.Background(), log, e))
		if strings.Contains(st.Message(), "constraint") || strings.Contains(st.Message(), "SQLSTATE") || st.Message() != e.Public() {
			t.Errorf("%v → %q, want %q", e.Kind, st.Message(), e.Public())
		}
	}
}

// An error relayed through two services comes out as one sentence with its field, not nested status texts.
func TestRelayedErrorIsNotNested(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	orig := errs.InvalidField("mysis", "must not contain a NUL byte")
	var err error = orig
	for hop := range 4 {
		err = ToStatus(context.Background(), log, err)
		err = FromStatus(err)
		err = fmt.Errorf("hop %d: %w", hop, err)
	}
	st := status.Convert(ToStatus(context.Background(), log, err))
	if st.Code() != codes.InvalidArgument || st.Message() != "mysis: must not contain a NUL byte" {
		t.Fatalf("after four hops: %v %q", st.Code(), st.Message())
	}
	var field string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			field = br.GetFieldViolations()[0].GetField()
		}
	}
	if field != "mysis" || errs.FieldOf(FromStatus(st.Err())) != "mysis" {
		t.Errorf("field detail %q, recovered %q", field, errs.FieldOf(FromStatus(st.Err())))
	}
}

// A service that cannot reach another relays a sentence, not gRPC's transport text; its own log keeps the cause.
// An Unavailable a Zoea service sent keeps its sentence.
func TestUnreachablePeerIsRelayedAsASentence(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	transport := status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:7001: connect: connection refused"`)
	got := FromStatus(transport)
	if !errs.Is(got, errs.Unavailable) || !strings.Contains(got.Error(), "connection refused") {
		t.Fatalf("the cause must stay for the log: %v", got)
	}
	if st := status.Convert(ToStatus(context.Background(), log, got)); st.Message() != unreachableMsg {
		t.Fatalf("relayed as %q, want %q", st.Message(), unreachableMsg)
	}
	sent := ToStatus(context.Background(), log, &errs.Error{Kind: errs.Unavailable, Msg: "the game server did not list its tools"})
	if st := status.Convert(ToStatus(context.Background(), log, FromStatus(sent))); st.Message() != "the game server did not list its tools" {
		t.Fatalf("a Zoea service's own Unavailable relayed as %q", st.Message())
	}
}

// A public sentence that quotes a provider leaves redacted: by the secrets the logger's redactor knows, and by
// their shapes with a plain logger.
func TestToStatusRedactsPublicText(t *testing.T) {
	key := "q7Zx2LmN9vBw4RtY8uKp3HsD"
	e := &errs.Error{Kind: errs.Conflict, Msg: "provider check failed: Incorrect API key provided: " + key}
	shaped := errs.InvalidField("model", "the server says: Bearer %s", key)
	known := slog.New(redact.New(key).Handler(slog.DiscardHandler))
	for name, c := range map[string]struct {
		log *slog.Logger
		err error
	}{
		"known value": {known, e},
		"shape":       {slog.New(slog.DiscardHandler), shaped},
	} {
		st := status.Convert(ToStatus(context.Background(), c.log, c.err))
		text := st.Message()
		for _, d := range st.Details() {
			if br, ok := d.(*errdetails.BadRequest); ok {
				text += br.GetFieldViolations()[0].GetDescription()
			}
		}
		if strings.Contains(text, key) || !strings.Contains(text, redact.Marker) {
			t.Errorf("%s: %q", name, text)
		}
	}
}
