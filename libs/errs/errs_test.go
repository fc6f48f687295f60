package errs_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/zoeaswarm/zoea/libs/errs"
)

func TestErrorText(t *testing.T) {
	cause := errors.New("dial tcp: refused")
	cases := []struct {
		err  error
		want string
	}{
		{errs.InvalidField("memories[3].content", "contains a NUL byte"), "memories[3].content: contains a NUL byte"},
		{errs.NotFoundf("no mysis named %q", "scout-1"), `no mysis named "scout-1"`},
		{errs.Unavailablef(cause, "memory service unreachable"), "memory service unreachable: dial tcp: refused"},
		{&errs.Error{Kind: errs.Internal, Err: cause}, "dial tcp: refused"},
		{errs.Abortedf(cause, "lost a race"), "lost a race: dial tcp: refused"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
	}
}

func TestKindFieldReasonThroughWrapping(t *testing.T) {
	base := errs.InvalidField("name", "must not be empty")
	wrapped := fmt.Errorf("create mysis: %w", base)
	if errs.KindOf(wrapped) != errs.Invalid || errs.FieldOf(wrapped) != "name" {
		t.Fatalf("kind %v field %q through %%w", errs.KindOf(wrapped), errs.FieldOf(wrapped))
	}
	if errs.KindOf(errors.New("plain")) != errs.Internal || errs.FieldOf(errors.New("plain")) != "" {
		t.Fatal("an unclassified error must be Internal with no field")
	}
	if errs.Is(nil, errs.Internal) {
		t.Fatal("nil is no error of any kind")
	}
	if got := errs.ReasonOf(wrapped); got != errs.ReasonInvalidArgument {
		t.Fatalf("generic reason = %q", got)
	}
	own := &errs.Error{Kind: errs.Conflict, Msg: "spend limit reached", Reason: "SPEND_LIMIT_REACHED"}
	if got := errs.ReasonOf(fmt.Errorf("turn: %w", own)); got != "SPEND_LIMIT_REACHED" {
		t.Fatalf("own reason = %q", got)
	}
}

func TestRetryable(t *testing.T) {
	cases := map[error]bool{
		nil:                                   false,
		errs.Unavailablef(nil, "down"):        true,
		errs.Abortedf(nil, "serialization"):   true,
		&errs.Error{Kind: errs.Timeout}:       true,
		errs.Conflictf("already stopped"):     false,
		errs.InvalidField("x", "bad"):         false,
		errors.New("unclassified"):            false,
		fmt.Errorf("w: %w", context.Canceled): false,
	}
	for err, want := range cases {
		if got := errs.Retryable(err); got != want {
			t.Errorf("Retryable(%v) = %v, want %v", err, got, want)
		}
	}
}

func TestEveryKindHasAReason(t *testing.T) {
	seen := map[string]errs.Kind{}
	for k := errs.Internal; k <= errs.PermissionDenied; k++ {
		r := k.Reason()
		if prev, dup := seen[r]; dup {
			t.Fatalf("kinds %v and %v share reason %q", prev, k, r)
		}
		seen[r] = k
	}
}
