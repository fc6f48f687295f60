// Package app wires the composer: configuration (libs/config), the memory service adapter (memoryclient), the
// token counter, the grpcapi transport registered on libs/server. cmd/composer calls Main; tests call LoadConfig
// and Run.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/config"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/services/composer/internal/bufpool"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/grpcapi"
	"github.com/zoeaswarm/zoea/services/composer/internal/memoryclient"
	"github.com/zoeaswarm/zoea/services/composer/internal/o200k"
	"github.com/zoeaswarm/zoea/services/composer/internal/tokcache"
)

// Config is the composer's configuration, read from the environment. Policy fields preset to compose.DefaultPolicy
// are the defaults every request starts from.
type Config struct {
	Server     server.Config
	MemoryAddr string `env:"ZOEA_MEMORY_ADDR" envDefault:"127.0.0.1:7001"`
	// MaxWindowBytes bounds one GetComposeWindow response (a 1000-memory window of big tool results is large).
	MaxWindowBytes int `env:"ZOEA_COMPOSE_MAX_WINDOW_BYTES" envDefault:"67108864"`
	// TokenCacheEntries bounds the token-count cache (about 80 bytes per entry); 0 uses the package default.
	TokenCacheEntries int `env:"ZOEA_COMPOSE_TOKEN_CACHE_ENTRIES" envDefault:"262144"`
	// CarryCacheBytes bounds the windows held, over all myses (window/carries.go: the memory service then skips
	// reading them); 0 holds none.
	CarryCacheBytes int64 `env:"ZOEA_COMPOSE_CARRY_CACHE_BYTES" envDefault:"67108864"`
	Policy          PolicyConfig
}

// PolicyConfig is the server's default composition policy.
type PolicyConfig struct {
	ScanWindow      int      `env:"ZOEA_COMPOSE_SCAN_WINDOW"`
	TokenBudget     int      `env:"ZOEA_COMPOSE_TOKEN_BUDGET"`
	ToolResultCap   int      `env:"ZOEA_COMPOSE_TOOL_RESULT_CAP"`
	SnapshotTools   []string `env:"ZOEA_COMPOSE_SNAPSHOT_TOOLS" envSeparator:","`
	PinnedTools     []string `env:"ZOEA_COMPOSE_PINNED_TOOLS" envSeparator:","`
	NudgeGentle     string   `env:"ZOEA_COMPOSE_NUDGE_GENTLE"`
	NudgeFirm       string   `env:"ZOEA_COMPOSE_NUDGE_FIRM"`
	NudgeUrgent     string   `env:"ZOEA_COMPOSE_NUDGE_URGENT"`
	MissionFallback bool     `env:"ZOEA_COMPOSE_MISSION_FALLBACK"`
	CarryLimit      int      `env:"ZOEA_COMPOSE_CARRY_LIMIT"`
	ReplyLimit      int      `env:"ZOEA_COMPOSE_REPLY_LIMIT"`
	ReplyCap        int      `env:"ZOEA_COMPOSE_REPLY_CAP"`
	MaxTurnRows     int      `env:"ZOEA_COMPOSE_MAX_TURN_ROWS"`
	HighWater       int      `env:"ZOEA_COMPOSE_HIGH_WATER"`
	CompactStep     int      `env:"ZOEA_COMPOSE_COMPACT_STEP"`
	LowWater        int      `env:"ZOEA_COMPOSE_LOW_WATER"`
	CarryTokens     int      `env:"ZOEA_COMPOSE_CARRY_TOKENS"`
	// Compaction is "priced" (composition v3, the default) or "watermark" (v2: high_water/low_water decide).
	Compaction string `env:"ZOEA_COMPOSE_COMPACTION"`
	// CacheModel names the cache model priced compaction uses for every mysis (anthropic, openai, local, none);
	// empty: chosen per mysis from its provider and model.
	CacheModel string `env:"ZOEA_COMPOSE_CACHE_MODEL"`
}

// LoadConfig presets the composer's own defaults (listen port, compose.DefaultPolicy) and parses the environment
// over them.
func LoadConfig() (Config, error) {
	cfg := Config{
		Server: server.Config{ListenAddr: ":7002"},
		Policy: policyConfig(compose.DefaultPolicy()),
	}
	if err := config.LoadWith(&cfg); err != nil {
		return cfg, err
	}
	switch c := compose.Compaction(cfg.Policy.Compaction); c {
	case compose.CompactionPriced, compose.CompactionWatermark:
	default:
		return cfg, fmt.Errorf("ZOEA_COMPOSE_COMPACTION=%q: use %q or %q", c, compose.CompactionPriced, compose.CompactionWatermark)
	}
	if n := cfg.Policy.CacheModel; n != "" {
		if _, ok := compose.CacheModelNamed(n); !ok {
			return cfg, fmt.Errorf("ZOEA_COMPOSE_CACHE_MODEL=%q: use anthropic, openai, local or none (empty: by each mysis's provider and model)", n)
		}
	}
	return cfg, nil
}

// policyConfig and policy are the one mapping between the composer's policy and its variables, each way
// (TestPolicyConfigRoundTrips holds them to every field of compose.Policy).
func policyConfig(p compose.Policy) PolicyConfig {
	return PolicyConfig{
		ScanWindow: p.ScanWindow, TokenBudget: p.TokenBudget, ToolResultCap: p.ToolResultCap,
		SnapshotTools: p.SnapshotTools, PinnedTools: p.PinnedTools,
		NudgeGentle: p.Nudges.Gentle, NudgeFirm: p.Nudges.Firm, NudgeUrgent: p.Nudges.Urgent,
		MissionFallback: !p.DisableMissionFallback,
		CarryLimit:      p.CarryLimit, ReplyLimit: p.ReplyLimit, ReplyCap: p.ReplyCap, MaxTurnRows: p.MaxTurnRows,
		HighWater: p.HighWater, CompactStep: p.CompactStep, LowWater: p.LowWater, CarryTokens: p.CarryTokens,
		Compaction: string(p.Compaction), CacheModel: p.Cache.Name,
	}
}

func (pc PolicyConfig) policy() compose.Policy {
	cache, _ := compose.CacheModelNamed(pc.CacheModel) // checked by LoadConfig; "" is the zero model: per mysis
	return compose.Policy{
		ScanWindow: pc.ScanWindow, TokenBudget: pc.TokenBudget, ToolResultCap: pc.ToolResultCap,
		SnapshotTools: pc.SnapshotTools, PinnedTools: pc.PinnedTools,
		Nudges:                 compose.Nudges{Gentle: pc.NudgeGentle, Firm: pc.NudgeFirm, Urgent: pc.NudgeUrgent},
		DisableMissionFallback: !pc.MissionFallback,
		CarryLimit:             pc.CarryLimit, ReplyLimit: pc.ReplyLimit, ReplyCap: pc.ReplyCap, MaxTurnRows: pc.MaxTurnRows,
		HighWater: pc.HighWater, CompactStep: pc.CompactStep, LowWater: pc.LowWater, CarryTokens: pc.CarryTokens,
		Compaction: compose.Compaction(pc.Compaction), Cache: cache,
	}
}

// Main is the whole composer command; cmd/composer gives it a signal context and turns its error into an exit code.
//
//	composer [serve]       serve until ctx ends
//	composer healthcheck   exit 0 when the local server reports SERVING (ready; --liveness: serving at all)
func Main(ctx context.Context, args []string, version string) error {
	cfg, err := LoadConfig()
	if err != nil {
		return err
	}
	cmd, rest, err := server.Subcommand("composer", args, "serve", "healthcheck")
	if err != nil {
		return err
	}
	if cmd == "healthcheck" {
		return server.HealthcheckCommand(ctx, "composer", cfg.Server.ListenAddr, rest)
	}
	// Windows and responses are tens to hundreds of KiB: gRPC's default pool would clear a 1 MiB buffer for each.
	// The pool is process-wide (grpc-go asks for it to be set before any server or connection exists), so the
	// process's entry sets it, not Run, which tests call beside their own connections.
	experimental.SetDefaultBufferPool(bufpool.New())
	log, stop, err := server.Start(ctx, "composer", version, cfg.Server, cfg)
	if err != nil {
		return err
	}
	defer stop()
	return Run(ctx, cfg, Options{Logger: log})
}

// Options are wiring details that are not configuration: tests set them, production leaves them zero.
type Options struct {
	// Logger receives everything; slog.Default() when nil.
	Logger *slog.Logger
	// Listener, when set, is served instead of listening on cfg.Server.ListenAddr (tests pass a loopback one).
	Listener net.Listener
}

// Run serves the composer with cfg until ctx ends: the tokenizer and its cache, the memory service adapter, the
// grpcapi transport on libs/server. It returns once the server has stopped gracefully.
func Run(ctx context.Context, cfg Config, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	tok, err := o200k.Load()
	if err != nil {
		return fmt.Errorf("tokenizer: %w", err)
	}
	memConn, err := server.Dial(cfg.MemoryAddr, cfg.Server.AdminToken.Reveal(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cfg.MaxWindowBytes)))
	if err != nil {
		return err
	}
	defer memConn.Close()

	policy := cfg.Policy.policy()
	counts := tokcache.New(tok, cfg.TokenCacheEntries)
	svc, err := grpcapi.New(memoryclient.New(memoryv1.NewMemoryServiceClient(memConn)), grpcapi.Options{
		Policy:          &policy,
		Counter:         counts,
		Logger:          log,
		CarryCacheBytes: carryCacheOption(cfg.CarryCacheBytes),
	})
	if err != nil {
		return err
	}
	defer server.PublishCaches(func() []server.CacheFill { return cacheFills(counts, svc) })()
	srv := server.New(server.Options{
		Name:   "composer",
		Config: cfg.Server,
		Logger: log,
		Checks: []server.Check{memoryclient.Ready(healthpb.NewHealthClient(memConn))},
	})
	srv.Register(&composerv1.ComposerService_ServiceDesc, svc)
	if opts.Listener != nil {
		return srv.Serve(ctx, opts.Listener)
	}
	return srv.Run(ctx)
}

// carryCacheOption maps ZOEA_COMPOSE_CARRY_CACHE_BYTES (0: none) to grpcapi.Options.CarryCacheBytes (0: the
// default, negative: none).
func carryCacheOption(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}

// cacheFills is the composer's caches for the debug listener: the token counts and the service's window caches.
func cacheFills(counts *tokcache.Cache, svc *grpcapi.Service) []server.CacheFill {
	out := []server.CacheFill{{Name: "composer.tokens", Unit: "entries", Size: int64(counts.Stats().Entries), Bound: int64(counts.Bound())}}
	for _, f := range svc.CacheFills() {
		out = append(out, server.CacheFill{Name: f.Name, Unit: f.Unit, Size: f.Size, Bound: f.Bound})
	}
	return out
}
