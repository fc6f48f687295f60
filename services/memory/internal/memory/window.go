package memory

import rules "github.com/zoeaswarm/zoea/libs/memoryrules"

// Compose-window limits (libs/memoryrules holds them, and the request and its checks).
const (
	MaxCarryLimit      = rules.MaxCarryLimit
	MaxReplyLimit      = rules.MaxReplyLimit
	DefaultMaxTurnRows = rules.DefaultMaxTurnRows
	MaxMaxTurnRows     = rules.MaxMaxTurnRows
	MaxWindowToolNames = rules.MaxWindowToolNames
	CarryScanRows      = rules.CarryScanRows
	MaxCarryKnownSeqs  = rules.MaxCarryKnownSeqs
	CallLookback       = rules.CallLookback
	// MaxResponseBytes bounds the text one read of recent memories returns (rules.MaxResponseBytes).
	MaxResponseBytes      = rules.MaxResponseBytes
	DefaultMaxResultBytes = rules.DefaultMaxResultBytes
	MinMaxResultBytes     = rules.MinMaxResultBytes
)

type (
	// WindowQuery is a GetComposeWindow request (rules.WindowQuery: Normalize validates it, applying defaults and
	// caps).
	WindowQuery = rules.WindowQuery
	// CarryKnown names the carried rows a caller holds (rules.CarryKnown).
	CarryKnown = rules.CarryKnown
)
