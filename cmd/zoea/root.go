package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/present"
	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/server"
)

// endpoints are the service addresses the CLI talks to; flags override the ZOEA_* environment.
type endpoints struct {
	runner, bus, memory string
	token               string
	timeout             time.Duration
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func newRoot(version string) *cobra.Command {
	ep := &endpoints{}
	root := &cobra.Command{
		Use:           "zoea",
		Short:         "Command a swarm of LLM agents playing SpaceMolt",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	f := root.PersistentFlags()
	f.StringVar(&ep.runner, "runner", envOr("ZOEA_RUNNER_ADDR", "127.0.0.1:7003"), "runner (SwarmService) address")
	f.StringVar(&ep.bus, "bus", envOr("ZOEA_BUS_ADDR", "127.0.0.1:7004"), "bus (BusService) address")
	f.StringVar(&ep.memory, "memory", envOr("ZOEA_MEMORY_ADDR", "127.0.0.1:7001"), "memory (MemoryService) address")
	// The default is read at dial time, never put in the flag: --help would print it.
	f.StringVar(&ep.token, "token", "", "admin bearer token (default: $ZOEA_ADMIN_TOKEN, "+tokenEnvState()+")")
	f.DurationVar(&ep.timeout, "timeout", 30*time.Second, "timeout of each call")

	// What the one-shot commands print (names, last actions, errors, memories) is partly a model's text: it is
	// shown escaped, never applied to the terminal, and without secrets (present.Safe). The console and zoea dev draw the screen
	// themselves and escape field by field.
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		if cmd.Name() != "tui" && cmd.Name() != "dev" {
			cmd.SetOut(present.SafeWriter(cmd.OutOrStdout(), ep.adminToken()))
		}
	}
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(
		listCmd(ep), getCmd(ep), createCmd(ep), startCmd(ep), stopCmd(ep), deleteCmd(ep), configureCmd(ep),
		broadcastCmd(ep), sendCmd(ep), searchCmd(ep), previewCmd(ep), watchCmd(ep), historyCmd(ep),
		tuiCmd(ep), webCmd(ep), devCmd(), seedDemoCmd(ep), usageCmd(ep), limitsCmd(ep), natsCmd(),
	)
	return root
}

// tokenEnvState says whether ZOEA_ADMIN_TOKEN is set, for --help, without showing it.
func tokenEnvState() string {
	if os.Getenv("ZOEA_ADMIN_TOKEN") != "" {
		return "set, not shown"
	}
	return "not set"
}

// adminToken is --token, or ZOEA_ADMIN_TOKEN when the flag is not given.
func (ep *endpoints) adminToken() string {
	if ep.token != "" {
		return ep.token
	}
	return os.Getenv("ZOEA_ADMIN_TOKEN")
}

type clients struct {
	swarm  runnerv1.SwarmServiceClient
	bus    busv1.BusServiceClient
	memory memoryv1.MemoryServiceClient
	conns  []*grpc.ClientConn
}

// addrs are the services' addresses by service name, for the sentences of failed calls.
func (ep *endpoints) addrs() map[string]string {
	return map[string]string{"runner": ep.runner, "bus": ep.bus, "memory": ep.memory}
}

func (c *clients) Close() {
	for _, conn := range c.conns {
		conn.Close()
	}
}

func (ep *endpoints) dial() (*clients, error) {
	c := &clients{}
	for _, t := range []struct {
		addr string
		set  func(*grpc.ClientConn)
	}{
		{ep.runner, func(cc *grpc.ClientConn) { c.swarm = runnerv1.NewSwarmServiceClient(cc) }},
		{ep.bus, func(cc *grpc.ClientConn) { c.bus = busv1.NewBusServiceClient(cc) }},
		{ep.memory, func(cc *grpc.ClientConn) { c.memory = memoryv1.NewMemoryServiceClient(cc) }},
	} {
		conn, err := server.Dial(t.addr, ep.adminToken())
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("dial %s: %w", t.addr, err)
		}
		c.conns = append(c.conns, conn)
		t.set(conn)
	}
	return c, nil
}
