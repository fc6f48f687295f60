// Package app wires the runner: clients of the memory and composer services, the NATS bus (wakes, events, leases,
// live statuses), the LLM providers, the tool router, the lease manager with its mysis actors and the SwarmService
// gRPC server. cmd/runner calls Main (configuration, logging, telemetry, then Run); end-to-end tests call Run
// in-process, which lets them add a scripted provider.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/config"
	"github.com/zoeaswarm/zoea/libs/redact"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/services/runner/internal/admin"
	"github.com/zoeaswarm/zoea/services/runner/internal/composerclient"
	"github.com/zoeaswarm/zoea/services/runner/internal/grpcapi"
	"github.com/zoeaswarm/zoea/services/runner/internal/lease"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/llmmetrics"
	"github.com/zoeaswarm/zoea/services/runner/internal/memoryclient"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
	"github.com/zoeaswarm/zoea/services/runner/internal/natsbus"
	"github.com/zoeaswarm/zoea/services/runner/internal/provider/ollama"
	"github.com/zoeaswarm/zoea/services/runner/internal/provider/openai"
	"github.com/zoeaswarm/zoea/services/runner/internal/providercheck"
	"github.com/zoeaswarm/zoea/services/runner/internal/tools"
	"github.com/zoeaswarm/zoea/services/runner/internal/usage"
)

// Config is the runner's configuration, from the environment.
type Config struct {
	Server       server.Config
	MemoryAddr   string `env:"ZOEA_MEMORY_ADDR" envDefault:"127.0.0.1:7001"`
	ComposerAddr string `env:"ZOEA_COMPOSER_ADDR" envDefault:"127.0.0.1:7002"`
	NATSURL      string `env:"ZOEA_NATS_URL" envDefault:"nats://127.0.0.1:4222" secret:"true"`
	// NATSReplicas is the JetStream replication of the stream and buckets: 1 for one server, 3 in a cluster.
	NATSReplicas int `env:"ZOEA_NATS_REPLICAS" envDefault:"1"`
	// NATSCreds is an nkey seed or JWT creds file; user/password or a token go in ZOEA_NATS_URL (logged masked).
	NATSCreds string `env:"ZOEA_NATS_CREDS"`
	// Swarm names this swarm's NATS stream, buckets and subjects, so swarms can share one NATS server; empty keeps
	// the default names. The swarm's bus must use the same name.
	Swarm        string `env:"ZOEA_SWARM"`
	SpaceMoltURL string `env:"ZOEA_SPACEMOLT_URL" envDefault:"http://127.0.0.1:7100/mcp"`
	// SpaceMoltEndpoint picks the game's MCP endpoint for the swarm: "v1" (the legacy flat tools at /mcp) or "v2"
	// (the 16 action tools at /mcp/v2), rewriting the path of ZOEA_SPACEMOLT_URL; empty plays the URL as given
	// (a URL ending in /mcp/v2 is v2).
	SpaceMoltEndpoint string `env:"ZOEA_SPACEMOLT_ENDPOINT"`
	// SpaceMoltResult is what the model reads of a v2 result: text or structured (docs/BENCHMARKS.md); empty
	// selects the measured default.
	SpaceMoltResult string `env:"ZOEA_SPACEMOLT_RESULT"`
	// SpaceMoltMaxWait is the longest action_pending / in_transit / rate_limited wait spent inside a tool call.
	SpaceMoltMaxWait time.Duration `env:"ZOEA_SPACEMOLT_MAX_WAIT" envDefault:"30s"`
	// SpaceMoltAuthPerMin paces this replica's game session creations, logins and registers (the game limits them
	// per address: 30 a minute on the live server, tools.DefaultAuthPerMinute here); 0 or negative: not paced.
	// Replicas behind one address: give each its share.
	SpaceMoltAuthPerMin int `env:"ZOEA_SPACEMOLT_AUTH_PER_MIN" envDefault:"24"`

	DefaultProvider string `env:"ZOEA_DEFAULT_PROVIDER" envDefault:"autopilot"`
	// OllamaHost (OLLAMA_HOST, in any form Ollama accepts: ollama.HostURL) and OpenAIBaseURL (OPENAI_BASE_URL) are
	// read here only; the providers and the provider check get them from Run, never from the environment.
	OllamaHost    string        `env:"OLLAMA_HOST"`
	OllamaModel   string        `env:"ZOEA_OLLAMA_MODEL" envDefault:"qwen3:8b"`
	OllamaNumCtx  int           `env:"ZOEA_OLLAMA_NUM_CTX" envDefault:"16384"`
	OpenAIKey     config.Secret `env:"OPENAI_API_KEY"`
	OpenAIBaseURL string        `env:"OPENAI_BASE_URL"`
	OpenAIModel   string        `env:"ZOEA_OPENAI_MODEL" envDefault:"gpt-4o-mini"`
	// LLMMaxReplyBytes bounds what is read of one model reply, for every provider (providers' httpx): past it the
	// call fails unread, so a provider sending gigabytes cannot take the runner's memory with it. 0 means the default.
	LLMMaxReplyBytes int64 `env:"ZOEA_LLM_MAX_REPLY_BYTES" envDefault:"8388608"`
	// LLMTimeout bounds one LLM call, retries included (0: none); it ends a reply that stalls or trickles.
	LLMTimeout time.Duration `env:"ZOEA_LLM_TIMEOUT" envDefault:"10m"`
	// ProviderConcurrency limits concurrent calls per provider (0: unlimited).
	ProviderConcurrency int `env:"ZOEA_PROVIDER_CONCURRENCY" envDefault:"8"`
	// AutopilotConcurrency limits the offline policy separately (0: unlimited): it costs microseconds.
	AutopilotConcurrency int `env:"ZOEA_AUTOPILOT_CONCURRENCY" envDefault:"0"`
	// AutopilotLatency delays every autopilot reply by this long (0: none), so load and scale runs see turns as long
	// as a real model's.
	AutopilotLatency time.Duration `env:"ZOEA_AUTOPILOT_LATENCY" envDefault:"0s"`

	MaxToolIterations int `env:"ZOEA_MAX_TOOL_ITERATIONS" envDefault:"10"`
	// MaxCallsPerReply bounds the tool calls run from one model reply; the others are answered with a tool error.
	MaxCallsPerReply int           `env:"ZOEA_MAX_CALLS_PER_REPLY" envDefault:"16"`
	TurnPause        time.Duration `env:"ZOEA_TURN_PAUSE" envDefault:"2s"`
	BackoffMin       time.Duration `env:"ZOEA_ERROR_BACKOFF_MIN" envDefault:"2s"`
	BackoffMax       time.Duration `env:"ZOEA_ERROR_BACKOFF_MAX" envDefault:"2m"`
	LeaseTTL         time.Duration `env:"ZOEA_LEASE_TTL" envDefault:"15s"`
	ReplicaID        string        `env:"ZOEA_REPLICA_ID"`
	// StopGrace bounds a graceful shutdown: actors yield at the end of their turn for its first half, then stop at
	// the next safe point; whatever still runs when it is over is cancelled. Keep it below the pod's grace period.
	StopGrace time.Duration `env:"ZOEA_STOP_GRACE" envDefault:"10s"`

	// Prices override or extend the built-in price table: "provider/model=input,cached_input,output;…" in USD per
	// million tokens. PricesFile is a JSON file of the same ({"openai/gpt-4o": {"input":2.5,…}}); ZOEA_PRICES wins.
	Prices     string `env:"ZOEA_PRICES"`
	PricesFile string `env:"ZOEA_PRICES_FILE"`
	// SpendLimitsMysis apply to every mysis without its own ("cost/day=2.00,tokens/hour=200000");
	// SpendLimitsSwarm to the whole swarm.
	SpendLimitsMysis string `env:"ZOEA_SPEND_LIMITS_MYSIS"`
	SpendLimitsSwarm string `env:"ZOEA_SPEND_LIMITS_SWARM"`

	Empire              string        `env:"ZOEA_SPACEMOLT_EMPIRE" envDefault:"solarian"`
	RegistrationCode    config.Secret `env:"ZOEA_SPACEMOLT_REGISTRATION_CODE"`
	SimRegistrationCode config.Secret `env:"ZOEA_SIM_REGISTRATION_CODE"`
}

// LoadConfig reads the environment with the runner's defaults.
func LoadConfig() (Config, error) {
	cfg := Config{Server: server.Config{ListenAddr: ":7003"}}
	if err := config.LoadWith(&cfg); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

// SpaceMoltEndpointURL applies ZOEA_SPACEMOLT_ENDPOINT to ZOEA_SPACEMOLT_URL: v1 ends the path in /mcp, v2 in
// /mcp/v2, empty keeps the URL (tools.EndpointURL, which also applies a mysis's own choice).
func SpaceMoltEndpointURL(raw, endpoint string) (string, error) {
	if endpoint != "" && endpoint != tools.EndpointV1 && endpoint != tools.EndpointV2 {
		return "", fmt.Errorf("ZOEA_SPACEMOLT_ENDPOINT must be v1 or v2, got %q", endpoint)
	}
	u, err := tools.EndpointURL(raw, endpoint)
	if err != nil {
		return "", fmt.Errorf("ZOEA_SPACEMOLT_URL: %w", err)
	}
	return u, nil
}

// minReplyBytes is the smallest reply limit accepted: below it an ordinary answer with a few tool calls fails.
const minReplyBytes = 64 << 10

// Validate checks values the environment parser cannot.
func (c *Config) Validate() error {
	u, err := SpaceMoltEndpointURL(c.SpaceMoltURL, c.SpaceMoltEndpoint)
	if err != nil {
		return err
	}
	c.SpaceMoltURL = u
	switch {
	case c.SpaceMoltResult != "" && c.SpaceMoltResult != tools.ViewText && c.SpaceMoltResult != tools.ViewStructured:
		return fmt.Errorf("ZOEA_SPACEMOLT_RESULT must be text or structured, got %q", c.SpaceMoltResult)
	case c.SpaceMoltMaxWait < 0:
		return errors.New("ZOEA_SPACEMOLT_MAX_WAIT must not be negative")
	case c.MaxToolIterations < 1:
		return errors.New("ZOEA_MAX_TOOL_ITERATIONS must be at least 1")
	case c.MaxCallsPerReply < 0:
		return errors.New("ZOEA_MAX_CALLS_PER_REPLY must not be negative (0 means the default)")
	case c.TurnPause < 0:
		return errors.New("ZOEA_TURN_PAUSE must not be negative")
	case c.StopGrace < 0:
		return errors.New("ZOEA_STOP_GRACE must not be negative (0 means the default, 10s)")
	case c.LLMMaxReplyBytes != 0 && c.LLMMaxReplyBytes < minReplyBytes:
		return fmt.Errorf("ZOEA_LLM_MAX_REPLY_BYTES must be at least %d (64 KiB), got %d: real replies would fail", minReplyBytes, c.LLMMaxReplyBytes)
	case c.LLMTimeout < 0:
		return errors.New("ZOEA_LLM_TIMEOUT must not be negative (0 means no limit)")
	case c.AutopilotLatency < 0:
		return errors.New("ZOEA_AUTOPILOT_LATENCY must not be negative")
	case c.LeaseTTL < time.Second:
		return errors.New("ZOEA_LEASE_TTL must be at least 1s")
	case c.BackoffMin <= 0 || c.BackoffMax < c.BackoffMin:
		return errors.New("ZOEA_ERROR_BACKOFF_MIN must be positive and not above ZOEA_ERROR_BACKOFF_MAX")
	}
	if err := swarmbus.ValidateSwarm(c.Swarm); err != nil {
		return err
	}
	if _, err := c.PriceTable(); err != nil {
		return err
	}
	if _, err := c.SpendConfig(); err != nil {
		return err
	}
	if c.ReplicaID == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "runner"
		}
		c.ReplicaID = host + "-" + strconv.Itoa(os.Getpid())
	}
	return nil
}

// Options are hooks for tests and tools.
type Options struct {
	Logger *slog.Logger
	// Providers are registered in addition to the built-in ones (a test's scripted model); one with a built-in's
	// name replaces it.
	Providers []llm.Provider
	// Listener, when set, is served instead of listening on cfg.Server.ListenAddr.
	Listener net.Listener
	// OnReady is called with the gRPC address once the server listens.
	OnReady func(addr net.Addr)
	// OnLeaseScan, when set, is called after each lease scan has tried every mysis (tests wait for the first).
	OnLeaseScan func()
	// WrapProvider, when set, wraps every registered provider (load tests measure model time with it).
	WrapProvider func(llm.Provider) llm.Provider
	// Clock, when set, is the clock of spend windows (tests roll a window over with it).
	Clock mysis.Clock
	// MeterProvider and TracerProvider, when set, replace the global OpenTelemetry providers.
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider
}

// PriceTable is the built-in price table with ZOEA_PRICES_FILE and ZOEA_PRICES applied.
func (c *Config) PriceTable() (usage.Prices, error) {
	tables := []map[string]usage.Price{usage.DefaultPrices()}
	if c.PricesFile != "" {
		t, err := usage.LoadPricesFile(c.PricesFile)
		if err != nil {
			return usage.Prices{}, fmt.Errorf("ZOEA_PRICES_FILE: %w", err)
		}
		tables = append(tables, t)
	}
	t, err := usage.ParsePrices(c.Prices)
	if err != nil {
		return usage.Prices{}, fmt.Errorf("ZOEA_PRICES: %w", err)
	}
	return usage.NewPrices(append(tables, t)...), nil
}

// SpendConfig parses the configured spend limits.
func (c *Config) SpendConfig() (usage.Config, error) {
	m, err := usage.ParseLimits(c.SpendLimitsMysis)
	if err != nil {
		return usage.Config{}, fmt.Errorf("ZOEA_SPEND_LIMITS_MYSIS: %w", err)
	}
	sw, err := usage.ParseLimits(c.SpendLimitsSwarm)
	if err != nil {
		return usage.Config{}, fmt.Errorf("ZOEA_SPEND_LIMITS_SWARM: %w", err)
	}
	return usage.Config{MysisDefaults: m, Swarm: sw}, nil
}

// Run runs the runner until ctx ends, then stops every actor at a safe point, releases its leases and stops the
// server gracefully.
func Run(ctx context.Context, cfg Config, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	// One redactor for everything the runner writes down or shows: the logger's (Main's comes redacting, from
	// server.Start), else one of its own around the given logger. It knows the configured secrets, learns each
	// account password as a session takes it, and the providers add their keys.
	red := redact.Of(log.Handler())
	if red == nil {
		red = redact.New()
		log = slog.New(red.Handler(log.Handler()))
	}
	red.Add(config.Secrets(cfg)...)
	log = log.With("replica", cfg.ReplicaID)

	memConn, err := server.Dial(cfg.MemoryAddr, cfg.Server.AdminToken.Reveal(), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return err
	}
	defer memConn.Close()
	compConn, err := server.Dial(cfg.ComposerAddr, cfg.Server.AdminToken.Reveal(), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return err
	}
	defer compConn.Close()
	memAPI := memoryv1.NewMemoryServiceClient(memConn)
	memory := memoryclient.New(memAPI)
	composerAPI := composerv1.NewComposerServiceClient(compConn)

	bus, err := swarmbus.Connect(ctx, cfg.NATSURL, swarmbus.Options{Name: "runner-" + cfg.ReplicaID, Logger: log, LeaseTTL: cfg.LeaseTTL, Replicas: cfg.NATSReplicas, CredsFile: cfg.NATSCreds, Swarm: cfg.Swarm, Role: swarmbus.RoleRunner})
	if err != nil {
		return fmt.Errorf("nats: %w", err)
	}
	defer bus.Close()
	leases, err := bus.Leases(cfg.ReplicaID)
	if err != nil {
		return err
	}
	statuses := natsbus.NewStatuses(bus.Statuses(), log)
	// The status mirror has no bound of its own: one entry per mysis of the swarm (the soak watches it stay so).
	defer server.PublishCaches(func() []server.CacheFill {
		return []server.CacheFill{{Name: "runner.statuses", Unit: "myses", Size: int64(statuses.Len())}}
	})()

	ollamaURL, err := ollama.HostURL(cfg.OllamaHost)
	if err != nil {
		return err
	}
	registry, names, err := buildProviders(cfg, ollamaURL, opts.Providers, opts.WrapProvider, log, red)
	if err != nil {
		return err
	}
	// The configuration is the one reader of OLLAMA_HOST and OPENAI_BASE_URL: the providers and the check get
	// what it read, and neither looks at the environment.
	checker := providercheck.New(providercheck.Config{
		OllamaHost: ollamaURL, OpenAIKey: cfg.OpenAIKey.Reveal(), OpenAIBaseURL: cfg.OpenAIBaseURL,
		Skip: providerNames(opts.Providers),
	})
	regCode := cfg.RegistrationCode.Reveal()
	if regCode == "" {
		regCode = cfg.SimRegistrationCode.Reveal()
	}
	router := tools.NewRouter(tools.Config{Endpoint: cfg.SpaceMoltURL, Empire: cfg.Empire, RegistrationCode: regCode, Logger: log,
		ResultView: cfg.SpaceMoltResult, MaxWait: cfg.SpaceMoltMaxWait, AuthPerMinute: cfg.SpaceMoltAuthPerMin, Redactor: red}, memory, memory)
	events := natsbus.Events{Bus: bus, Log: log}
	actorCfg := mysis.Config{
		MaxToolIterations: cfg.MaxToolIterations, MaxCallsPerReply: cfg.MaxCallsPerReply, TurnPause: cfg.TurnPause, BackoffMin: cfg.BackoffMin, BackoffMax: cfg.BackoffMax,
		Owner: cfg.ReplicaID, Logger: log, Redactor: red, LLMTimeout: cfg.LLMTimeout,
	}
	prices, err := cfg.PriceTable()
	if err != nil {
		return err
	}
	spendCfg, err := cfg.SpendConfig()
	if err != nil {
		return err
	}
	var now func() time.Time
	if opts.Clock != nil {
		now = opts.Clock.Now
	}
	mp, tp := opts.MeterProvider, opts.TracerProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	metrics, err := llmmetrics.New(mp, tp)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	composer := composerclient.New(composerAPI, nil)
	deps := mysis.Deps{
		Store: memory, Composer: composer, Tools: router, Providers: registry,
		Events: events, Status: statuses,
		Spend: usage.NewGuard(memory, spendCfg, prices, now), Calls: memory, Metrics: metrics, Clock: opts.Clock,
	}
	mgr := lease.New(natsbus.Leases{L: leases}, memory, func(id string) lease.Actor { return mysis.New(id, deps, actorCfg) }, lease.Config{Logger: log, OnScan: opts.OnLeaseScan, StopGrace: cfg.StopGrace})

	srv := server.New(server.Options{
		Name: "runner", Config: cfg.Server, Logger: log,
		Checks: []server.Check{
			server.PeerCheck("memory", memConn, ""),
			server.PeerCheck("composer", compConn, ""),
			{Name: "nats", Fn: bus.Ready},
		},
	})
	api := grpcapi.New(memory, composer, natsbus.Wakes{Bus: bus}, live{statuses: statuses, mgr: mgr}, grpcapi.Defaults{
		Rules: admin.Rules{Provider: cfg.DefaultProvider, Providers: names, Serves: checker.Check,
			Models: map[string]string{"ollama": cfg.OllamaModel, "openai": cfg.OpenAIModel, admin.Autopilot: admin.Autopilot}},
		SpendLimits: spendCfg.MysisDefaults, Tools: router.Tools,
	})
	srv.Register(&runnerv1.SwarmService_ServiceDesc, api)

	sub, err := bus.SubscribeWakes(ctx, func(_ context.Context, w swarmbus.Wake) {
		mgr.Wake(w.MysisID, mysis.WakeReason(w.Reason))
	})
	if err != nil {
		return err
	}
	defer sub.Stop()
	// Wakes sent while disconnected are lost: every owned actor re-reads its mysis.
	bus.OnReconnect(func() { mgr.WakeAll(mysis.WakeBroadcast) })

	log.Info("runner starting", "providers", names, "lease_ttl", cfg.LeaseTTL.String())
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if opts.Listener != nil {
			return srv.Serve(gctx, opts.Listener)
		}
		return srv.Run(gctx)
	})
	if opts.OnReady != nil {
		g.Go(func() error {
			addr, err := srv.Addr(gctx)
			if err == nil {
				opts.OnReady(addr)
			}
			return nil
		})
	}
	g.Go(func() error { return statuses.Watch(gctx) })
	g.Go(func() error { return mgr.Run(gctx) })
	return g.Wait()
}

// live joins the shared status bucket with the lease table for the admin API.
type live struct {
	statuses *natsbus.Statuses
	mgr      *lease.Manager
}

func (l live) Status(id string) (mysis.Status, bool) {
	if st, ok := l.mgr.Local(id); ok {
		return st, true
	}
	return l.statuses.Get(id)
}

func (l live) Owner(id string) string { return l.mgr.Owner(id) }

func (l live) Silent(id string) (time.Time, bool) { return l.mgr.Silent(id) }

// registry adapts llm.Registry to mysis.Providers.
type registry struct{ r *llm.Registry }

func (r registry) Provider(name string) (llm.Provider, error) { return r.r.Get(name) }

// buildProviders registers every provider, each wrapped with Retry-After-aware retries and a concurrency limit.
// ollamaURL is cfg.OllamaHost as ollama.HostURL reads it.
func buildProviders(cfg Config, ollamaURL string, extra []llm.Provider, wrapAll func(llm.Provider) llm.Provider, log *slog.Logger, red *redact.Redactor) (mysis.Providers, []string, error) {
	var ps []llm.Provider
	overridden := func(name string) bool {
		return slices.ContainsFunc(extra, func(p llm.Provider) bool { return p.Name() == name })
	}
	oll, err := ollama.New(ollama.Config{BaseURL: ollamaURL, NumCtx: cfg.OllamaNumCtx, Redactor: red, MaxReplyBytes: cfg.LLMMaxReplyBytes})
	if err != nil {
		return nil, nil, err
	}
	if !overridden(oll.Name()) {
		ps = append(ps, wrap(oll, cfg.ProviderConcurrency, log))
	}
	oai, err := openai.New(openai.Config{BaseURL: cfg.OpenAIBaseURL, APIKey: cfg.OpenAIKey.Reveal(), Redactor: red, MaxReplyBytes: cfg.LLMMaxReplyBytes})
	if err != nil {
		return nil, nil, err
	}
	if !overridden(oai.Name()) {
		ps = append(ps, wrap(oai, cfg.ProviderConcurrency, log))
	}
	if ap := autopilotProvider(cfg.MaxToolIterations); ap != nil && !overridden(ap.Name()) {
		ps = append(ps, llm.WithLimit(withLatency(ap, cfg.AutopilotLatency), cfg.AutopilotConcurrency))
	}
	ps = append(ps, extra...)
	if wrapAll != nil {
		for i, p := range ps {
			ps[i] = wrapAll(p)
		}
	}
	r, err := llm.NewRegistry(ps...)
	if err != nil {
		return nil, nil, err
	}
	return registry{r}, r.Names(), nil
}

func providerNames(ps []llm.Provider) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name()
	}
	return out
}

func wrap(p llm.Provider, limit int, log *slog.Logger) llm.Provider {
	name := p.Name()
	return llm.WithLimit(llm.WithRetry(p, llm.RetryOptions{OnRetry: func(attempt int, wait time.Duration, err error) {
		log.Warn("llm call retried", "provider", name, "attempt", attempt, "wait", wait.String(), "err", err)
	}}), limit)
}
