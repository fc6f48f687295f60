package memory

import (
	"errors"

	"github.com/zoeaswarm/zoea/libs/errs"
	rules "github.com/zoeaswarm/zoea/libs/memoryrules"
)

// ReasonPromptArrived is the ErrorInfo reason of a conditional append refused because a commander prompt (a direct
// message or broadcast) arrived after the seq the caller's model saw (AppendCondition.IfNoPromptAfterSeq).
const ReasonPromptArrived = rules.ReasonPromptArrived

// AppendCondition makes an append conditional, decided in its transaction under the mysis lock. A full retry (every
// memory's idempotency key already stored) returns the stored rows and checks nothing.
type AppendCondition struct {
	// IfNoPromptAfterSeq, when set, refuses the append (Conflict, ReasonPromptArrived) when the mysis has a user
	// memory with source direct or broadcast whose seq is greater.
	IfNoPromptAfterSeq *int64
	// State, when set, is applied in the same transaction; its Expected makes the append a compare-and-set.
	State *StateChange
}

// Validate checks the condition's fields.
func (c AppendCondition) Validate() error {
	if c.IfNoPromptAfterSeq != nil && *c.IfNoPromptAfterSeq < 0 {
		return errs.InvalidField("if_no_prompt_after_seq", "must not be negative")
	}
	if c.State != nil {
		if err := rules.ValidateStateChange(*c.State); err != nil {
			var e *errs.Error
			if errors.As(err, &e) && e.Field != "" {
				return &errs.Error{Kind: e.Kind, Field: "state_change." + e.Field, Msg: e.Msg}
			}
			return err
		}
	}
	return nil
}
