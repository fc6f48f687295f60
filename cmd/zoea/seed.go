package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/present"
	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/server"
)

// demoSeed is the demo swarm: myses mysis-1…mysis-N and the mission they get.
type demoSeed struct {
	myses    int
	provider string // "" = the runner's ZOEA_DEFAULT_PROVIDER
	model    string // "" = the provider's default model
	mission  string
	// switchExisting moves demo myses that already exist to provider (and model, when set): the commander asked
	// for them by flag or ZOEA_PROVIDER, so a swarm first run on autopilot plays with the real model next time.
	switchExisting bool
}

// missionNamespace scopes the broadcast ids of seeded missions (a fixed random UUID).
var missionNamespace = uuid.MustParse("5b0f4c1e-9a57-4d0e-8d0c-2f6a8e1c7b21")

// missionID is the broadcast id of a seeded mission, fixed by its text and the ids of the myses it is for: seeding
// the same swarm again (a restarted `zoea dev`, a re-run compose job) does not broadcast it twice, since the bus and
// the memory service deliver a broadcast id once. The mysis ids make it differ between databases (a --fresh start,
// another test), which matters because JetStream drops a message id it has seen recently on the same server.
func missionID(mission string, mysisIDs []string) string {
	ids := slices.Sorted(slices.Values(mysisIDs))
	return uuid.NewSHA1(missionNamespace, []byte(mission+"\x00"+strings.Join(ids, ","))).String()
}

func seedDemoCmd(ep *endpoints) *cobra.Command {
	s := demoSeed{}
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "seed-demo",
		Short: "Create the demo swarm, broadcast its mission and start it (idempotent; what 'zoea dev' and compose run)",
		Long: `seed-demo creates myses mysis-1…mysis-N (keeping any that exist, with their history), broadcasts the mission
once (the broadcast id is derived from the text, so running it again sends nothing new) and starts every demo
mysis. With --provider (or ZOEA_PROVIDER), demo myses that already exist switch to that provider and --model.
docker compose runs it as a one-shot job after the runner is healthy; 'zoea dev' runs the same code.`,
		Args: noArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if s.myses < 1 {
				return fmt.Errorf("--myses must be at least 1, got %d", s.myses)
			}
			s.switchExisting = s.provider != "" // set by --provider or ZOEA_PROVIDER
			c, err := ep.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			// docker compose starts this job once the runner's and the bus's processes serve (their containers' health
			// checks ask liveness, so a dependency's outage does not block `up`): wait here for them to be ready.
			if err := awaitReady(cmd.Context(), c, ep, wait); err != nil {
				return err
			}
			// Creating, broadcasting and starting are several calls: give the whole seed the per-call timeout each.
			ctx, cancel := context.WithTimeout(cmd.Context(), ep.timeout*time.Duration(2*s.myses+1))
			defer cancel()
			return seedDemo(ctx, c, ep, s, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.DurationVar(&wait, "wait", 2*time.Minute, "how long to wait for the runner and the bus to be ready (gRPC health SERVING)")
	f.IntVar(&s.myses, "myses", envInt("ZOEA_DEMO_MYSES", 3), "size of the demo swarm")
	f.StringVar(&s.provider, "provider", envOr("ZOEA_PROVIDER", ""), "LLM provider of new demo myses (default: the runner's)")
	f.StringVar(&s.model, "model", "", "model of new demo myses (default: the provider's)")
	f.StringVar(&s.mission, "mission", envOr("ZOEA_DEMO_MISSION", defaultMission), "mission broadcast to the swarm")
	return cmd
}

// awaitReady waits up to wait for the runner's and the bus's readiness (gRPC health "" SERVING: their own
// dependencies answer too); an error names the one that is not ready.
func awaitReady(ctx context.Context, c *clients, ep *endpoints, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for i, peer := range []struct{ name, addr string }{{"runner", ep.runner}, {"bus", ep.bus}} {
		if err := server.AwaitServing(ctx, c.conns[i], ""); err != nil {
			return fmt.Errorf("the %s at %s is not ready after %s: %w", peer.name, peer.addr, wait, err)
		}
	}
	return nil
}

// seedDemo creates the demo myses that do not exist yet (and, with switchExisting, moves existing ones to the
// provider asked for), broadcasts the mission once and starts them all. Errors are sentences about ep's services.
func seedDemo(ctx context.Context, c *clients, ep *endpoints, s demoSeed, out io.Writer) error {
	runnerErr := func(what string, err error) error {
		return fmt.Errorf("%s: %w", what, present.Explain(err, present.Subject{Service: "runner", Addr: ep.runner}))
	}
	names := make([]string, s.myses)
	ids := make([]string, s.myses)
	for i := range names {
		names[i] = fmt.Sprintf("mysis-%d", i+1)
		resp, err := c.swarm.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: names[i], Provider: s.provider, Model: s.model})
		switch {
		case err == nil:
			ids[i] = resp.GetStatus().GetMysis().GetId()
			fmt.Fprintf(out, "swarm: created %s (%s)\n", names[i], orDefault(s.provider, "runner's default provider"))
		case status.Code(err) == codes.AlreadyExists:
			got, err := c.swarm.GetMysis(ctx, &runnerv1.GetMysisRequest{Mysis: names[i]})
			if err != nil {
				return runnerErr("get "+names[i], err)
			}
			m := got.GetStatus().GetMysis()
			ids[i] = m.GetId()
			if !s.switchExisting || m.GetProvider() == s.provider && (s.model == "" || m.GetModel() == s.model) {
				fmt.Fprintf(out, "swarm: %s exists (history kept)\n", names[i])
				continue
			}
			req := &runnerv1.ConfigureMysisRequest{Mysis: names[i], Provider: &s.provider}
			if s.model != "" {
				req.Model = &s.model
			}
			up, err := c.swarm.ConfigureMysis(ctx, req)
			if err != nil {
				return runnerErr(fmt.Sprintf("switch %s from %s to %s", names[i], m.GetProvider(), s.provider), err)
			}
			um := up.GetStatus().GetMysis()
			fmt.Fprintf(out, "swarm: %s exists (history kept), switched from %s/%s to %s/%s\n", names[i], m.GetProvider(), m.GetModel(),
				um.GetProvider(), um.GetModel())
		default:
			return runnerErr("create "+names[i], err)
		}
	}
	// The mission goes out before anyone starts, so the first turn answers it instead of nudging an idle crew. Its
	// id is fixed by its text and the swarm: a second seed delivers nothing new.
	id := missionID(s.mission, ids)
	resp, err := c.bus.Broadcast(ctx, &busv1.BroadcastRequest{Content: s.mission, BroadcastId: id})
	if err != nil {
		return fmt.Errorf("broadcast: %w", present.Explain(err, present.Subject{Service: "bus", Addr: ep.bus}))
	}
	fmt.Fprintf(out, "swarm: mission %s sent to the swarm once (sending it again changes nothing)\n", resp.GetBroadcastId())
	// A broadcast wakes idle myses by itself; starting explicitly also resumes myses a previous run left stopped.
	for _, name := range names {
		if _, err := c.swarm.StartMysis(ctx, &runnerv1.StartMysisRequest{Mysis: name}); err != nil {
			return runnerErr("start "+name, err)
		}
	}
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
