// Package app wires the bus service: configuration, the NATS connection (libs/swarmbus), the memory service
// client, the gRPC API and the delivery consumer. cmd/bus calls Main, which loads the configuration and calls Run;
// tests call Run too, with a loopback listener, so they exercise exactly what production runs.
package app

import (
	"context"
	"log/slog"
	"net"
	"time"

	"golang.org/x/sync/errgroup"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/config"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/services/bus/internal/delivery"
	"github.com/zoeaswarm/zoea/services/bus/internal/grpcapi"
	"github.com/zoeaswarm/zoea/services/bus/internal/memoryclient"
	"github.com/zoeaswarm/zoea/services/bus/internal/natsbus"
	"github.com/zoeaswarm/zoea/services/bus/internal/send"
)

// Config is the bus's configuration, read from the environment.
type Config struct {
	// Server carries ZOEA_LISTEN_ADDR (default :7004), ZOEA_ADMIN_TOKEN and ZOEA_SHUTDOWN_TIMEOUT.
	Server server.Config
	// NATSURL is the NATS server (JetStream enabled).
	NATSURL string `env:"ZOEA_NATS_URL" envDefault:"nats://127.0.0.1:4222" secret:"true"`
	// NATSReplicas is the JetStream replication of the stream and buckets: 1 for one server, 3 in a cluster.
	NATSReplicas int `env:"ZOEA_NATS_REPLICAS" envDefault:"1"`
	// NATSCreds is an nkey seed or JWT creds file; user/password or a token go in ZOEA_NATS_URL.
	NATSCreds string `env:"ZOEA_NATS_CREDS"`
	// Swarm names this swarm's NATS stream, buckets and subjects, so swarms can share one NATS server; empty keeps
	// the default names. The runners of the swarm must use the same name.
	Swarm string `env:"ZOEA_SWARM"`
	// MemoryAddr is the memory service's gRPC address.
	MemoryAddr string `env:"ZOEA_MEMORY_ADDR" envDefault:"127.0.0.1:7001"`
	// AllowMysisBroadcast lets myses broadcast to the swarm (sender_id set); by default only the commander may.
	AllowMysisBroadcast bool `env:"ZOEA_ALLOW_MYSIS_BROADCAST" envDefault:"false"`
}

// LoadConfig reads Config from the environment with the bus's defaults.
func LoadConfig() (Config, error) {
	cfg := Config{Server: server.Config{ListenAddr: ":7004"}}
	if err := config.LoadWith(&cfg); err != nil {
		return Config{}, err
	}
	if err := swarmbus.ValidateSwarm(cfg.Swarm); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Options are wiring details that are not configuration: tests set them, production leaves them zero.
type Options struct {
	// Logger receives everything; slog.Default() when nil.
	Logger *slog.Logger
	// Listener replaces listening on Config.Server.ListenAddr.
	Listener net.Listener
	// Consumer tunes the delivery consumer (retry backoff, AckWait).
	Consumer swarmbus.ConsumerOptions
	// CheckInterval is the readiness check period (default 2s).
	CheckInterval time.Duration
	// PublishBudget bounds how long a Broadcast call waits for JetStream (default 10s).
	PublishBudget time.Duration
	// NoDelivery runs the API without the delivery consumer (a bus replica that only accepts messages).
	NoDelivery bool
}

// Run serves the bus until ctx is done, then stops gracefully: the API drains within the shutdown deadline and the
// delivery consumer finishes the message in hand.
func Run(ctx context.Context, cfg Config, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log.Info("nats", "url", config.RedactURL(cfg.NATSURL)) // the URL may carry credentials: logged without them

	connectCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	bus, err := swarmbus.Connect(connectCtx, cfg.NATSURL, swarmbus.Options{Name: "zoea-bus", Logger: log, Replicas: cfg.NATSReplicas, CredsFile: cfg.NATSCreds, Swarm: cfg.Swarm, Role: swarmbus.RoleBus})
	cancel()
	if err != nil {
		return err
	}
	defer bus.Close()

	memConn, err := server.Dial(cfg.MemoryAddr, cfg.Server.AdminToken.Reveal())
	if err != nil {
		return err
	}
	defer memConn.Close()

	memory := memoryclient.New(memoryv1.NewMemoryServiceClient(memConn))
	stream := natsbus.NewBroadcasts(bus)
	deliverer := delivery.New(memory, natsbus.New(bus), log)
	sender := send.New(stream, memory, deliverer, send.Options{AllowMysisBroadcast: cfg.AllowMysisBroadcast, PublishBudget: opts.PublishBudget, Logger: log})
	api := grpcapi.New(sender, stream, grpcapi.Options{Logger: log})
	checks := []server.Check{
		{Name: "nats", Fn: bus.Ready},
		server.PeerCheck("memory", memConn, ""),
	}
	if !opts.NoDelivery {
		// An acknowledged broadcast is only as good as the consumer that delivers it.
		checks = append(checks, server.Check{Name: "delivery consumer", Fn: bus.DeliveryReady})
	}
	srv := server.New(server.Options{
		Name:          "bus",
		Config:        cfg.Server,
		Logger:        log,
		CheckInterval: opts.CheckInterval,
		Checks:        checks,
	})
	srv.Register(&busv1.BusService_ServiceDesc, api)

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if opts.Listener != nil {
			return srv.Serve(ctx, opts.Listener)
		}
		return srv.Run(ctx)
	})
	if !opts.NoDelivery {
		g.Go(func() error { return stream.Consume(ctx, opts.Consumer, deliverer.Handle) })
	}
	return g.Wait()
}

// Main is the whole bus command; cmd/bus gives it a signal context and turns its error into an exit code.
//
//	bus [serve]       serve until ctx ends
//	bus healthcheck   exit 0 when the local server reports SERVING (ready; --liveness: serving at all)
func Main(ctx context.Context, args []string, version string) error {
	cfg, err := LoadConfig()
	if err != nil {
		return err
	}
	cmd, rest, err := server.Subcommand("bus", args, "serve", "healthcheck")
	if err != nil {
		return err
	}
	if cmd == "healthcheck" {
		return server.HealthcheckCommand(ctx, "bus", cfg.Server.ListenAddr, rest)
	}
	log, stop, err := server.Start(ctx, "bus", version, cfg.Server, cfg)
	if err != nil {
		return err
	}
	defer stop()
	return Run(ctx, cfg, Options{Logger: log})
}
