package game

import "fmt"

// Error codes the real SpaceMolt server answers with. Clients match on these
// strings, so they are part of the protocol and must not be renamed.
const (
	CodeNotAuthenticated    = "not_authenticated"
	CodeSessionRequired     = "session_required"
	CodeSessionInvalid      = "session_invalid"
	CodeInvalidPayload      = "invalid_payload"
	CodeAuthFailed          = "auth_failed"
	CodeUsernameTaken       = "username_taken"
	CodeInvalidRegistration = "invalid_registration_code"
	CodeRateLimited         = "rate_limited"
	CodeDocked              = "docked"
	CodeAlreadyDocked       = "already_docked"
	CodeNoResources         = "no_resources"
	CodeInvalidEmpire       = "invalid_empire"
	CodeInvalidUsername     = "invalid_username"
	CodeNotDocked           = "not_docked"
	CodeInvalidPOI          = "invalid_poi"
	CodeInvalidSystem       = "invalid_system"
	CodeWrongSystem         = "wrong_system"
	CodeNotConnected        = "not_connected"
	CodeNoFuel              = "no_fuel"
	CodeNoCredits           = "no_credits"
	CodeNoCargoSpace        = "no_cargo_space"
	CodeCargoFull           = "cargo_full"
	CodeActionPending       = "action_pending"
	CodeInTransit           = "in_transit"
	CodeDepositTooSparse    = "deposit_too_sparse"
	CodeItemNotAvailable    = "item_not_available"
	CodeEmptyEntry          = "empty_entry"
	CodePlayerNotFound      = "player_not_found"
	CodeServerReset         = "server_reset"
	CodePriceTooHigh        = "price_too_high"
	// The live docs name no codes for these; the simulator's own, in the live style.
	CodeMissionNotFound        = "mission_not_found"
	CodeMissionAlreadyAccepted = "mission_already_accepted"
	CodeMissionLimit           = "mission_limit_reached"
	CodeMissionIncomplete      = "mission_incomplete"
	CodeMissionExpired         = "mission_expired"
	CodeOrderNotFound          = "order_not_found"
)

// Error is a game rule violation. It is an expected outcome of a command, not a
// fault, and adapters render it the way the real server does.
type Error struct {
	Code    string
	Message string
	// RetryAfter is set (seconds) for rate_limited.
	RetryAfter int
	// SecondsRemaining is set for in_transit.
	SecondsRemaining int
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
