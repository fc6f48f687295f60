package game

import "time"

// Config tunes an Engine. The zero value of every field selects the documented
// default, so tests only set what they care about.
type Config struct {
	// Seed makes the galaxy, ids and mining rolls reproducible.
	Seed int64
	// Tick is the interval Run resolves queued mutations at (default 10s).
	Tick time.Duration
	// RegistrationCode, when non-empty, must be passed to register.
	RegistrationCode string
	// SessionTTL expires a game session after this long without requests (default 30m).
	SessionTTL time.Duration
	// Per-account limits per minute; 0 selects the default, negative disables the limit.
	MutationsPerMinute int
	ReadsPerMinute     int
	ChatPerMinute      int
	// NotificationCap bounds each player's notification queue (default 100).
	NotificationCap int
	// Now is the game clock (sessions, rate limits, timestamps). Default time.Now.
	Now func() time.Time
}

// Defaults mirror the live server.
const (
	DefaultTick               = 10 * time.Second
	DefaultSessionTTL         = 30 * time.Minute
	DefaultMutationsPerMinute = 30
	DefaultReadsPerMinute     = 300
	DefaultChatPerMinute      = 20
	DefaultNotificationCap    = 100
)

func (c Config) withDefaults() Config {
	if c.Tick <= 0 {
		c.Tick = DefaultTick
	}
	if c.SessionTTL <= 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.MutationsPerMinute == 0 {
		c.MutationsPerMinute = DefaultMutationsPerMinute
	}
	if c.ReadsPerMinute == 0 {
		c.ReadsPerMinute = DefaultReadsPerMinute
	}
	if c.ChatPerMinute == 0 {
		c.ChatPerMinute = DefaultChatPerMinute
	}
	if c.NotificationCap <= 0 {
		c.NotificationCap = DefaultNotificationCap
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}
