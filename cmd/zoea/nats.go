package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zoeaswarm/zoea/libs/config"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
)

// provisionFlags are `zoea nats provision`'s settings; each flag defaults to its ZOEA_* variable.
type provisionFlags struct {
	url, creds             string
	busURL, busCreds       string
	runnerURL, runnerCreds string
	swarm                  string
	replicas               int
	leaseTTL, wait         time.Duration
}

func natsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "nats",
		Short: "Administer the swarm's NATS resources",
		Args:  noArgs(),
	}
	cmd.AddCommand(natsProvisionCmd())
	return cmd
}

func natsProvisionCmd() *cobra.Command {
	p := provisionFlags{}
	cmd := &cobra.Command{
		Use:   "provision",
		Short: "Create or reconcile the swarm's NATS stream, consumer and KV buckets (at deploy time, as the provisioning users)",
		Long: `provision creates, or puts back to these settings, the NATS resources of a swarm: the message stream and the bus's
delivery consumer (in the bus's account) and the lease and status KV buckets (in the runners' account). No running
service may create or change them on a NATS with Zoea's authorization (deploy/nats/nats.conf): run this first, with
the provisioning users, and again after changing ZOEA_NATS_REPLICAS or ZOEA_LEASE_TTL. Give it the same ZOEA_SWARM,
ZOEA_NATS_REPLICAS and ZOEA_LEASE_TTL as the bus and the runners. It is idempotent: a resource that matches is left
alone. docker compose runs it as the one-shot job nats-provision, the k8s base as the Job nats-provision.

On a NATS without accounts (zoea dev, a local server without authorization) give --url alone; with Zoea's accounts
give --bus-url and --runner-url, each with that account's provisioning user (nats://provision-bus:PASSWORD@host:4222,
nats://provision-runner:PASSWORD@host:4222), or their creds files.`,
		Args: noArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p.url = cmp.Or(p.url, os.Getenv("ZOEA_NATS_URL"), "nats://127.0.0.1:4222")
			p.busURL = cmp.Or(p.busURL, os.Getenv("ZOEA_NATS_PROVISION_BUS_URL"))
			p.runnerURL = cmp.Or(p.runnerURL, os.Getenv("ZOEA_NATS_PROVISION_RUNNER_URL"))
			ctx, cancel := context.WithTimeout(cmd.Context(), p.wait)
			defer cancel()
			return provisionNATS(ctx, p, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	// URLs may carry passwords: their variables are read at run time, never put in a flag's default (--help
	// prints defaults).
	f.StringVar(&p.url, "url", "", "NATS URL(s), comma-separated, for a NATS without accounts: both parts on it (default $ZOEA_NATS_URL, else nats://127.0.0.1:4222)")
	f.StringVar(&p.creds, "creds", envOr("ZOEA_NATS_CREDS", ""), "nkey seed or creds file for --url")
	f.StringVar(&p.busURL, "bus-url", "", "NATS URL with the provisioning user of the bus's account (default $ZOEA_NATS_PROVISION_BUS_URL)")
	f.StringVar(&p.busCreds, "bus-creds", envOr("ZOEA_NATS_PROVISION_BUS_CREDS", ""), "nkey seed or creds file of the bus account's provisioning user")
	f.StringVar(&p.runnerURL, "runner-url", "", "NATS URL with the provisioning user of the runners' account (default $ZOEA_NATS_PROVISION_RUNNER_URL)")
	f.StringVar(&p.runnerCreds, "runner-creds", envOr("ZOEA_NATS_PROVISION_RUNNER_CREDS", ""), "nkey seed or creds file of the runners' account's provisioning user")
	f.StringVar(&p.swarm, "swarm", envOr("ZOEA_SWARM", ""), "swarm name, as the services' ZOEA_SWARM (empty: the default swarm)")
	f.IntVar(&p.replicas, "replicas", envInt("ZOEA_NATS_REPLICAS", 1), "JetStream replicas, as the services' ZOEA_NATS_REPLICAS (1 for one server, 3 in a cluster)")
	f.DurationVar(&p.leaseTTL, "lease-ttl", envDuration("ZOEA_LEASE_TTL", swarmbus.DefaultLeaseTTL), "lease bucket TTL, as the runners' ZOEA_LEASE_TTL")
	f.DurationVar(&p.wait, "wait", time.Minute, "how long to wait for NATS to answer")
	return cmd
}

// provisionNATS provisions each part on its URL and prints one line per resource, then a sentence saying what
// follows; an error says which part failed and why.
func provisionNATS(ctx context.Context, p provisionFlags, out, errOut io.Writer) error {
	switch {
	case p.replicas < 1:
		return fmt.Errorf("nats provision: --replicas must be at least 1 (1 for one server, 3 in a cluster), got %d", p.replicas)
	case p.leaseTTL < time.Second:
		return fmt.Errorf("nats provision: --lease-ttl must be at least 1s (as ZOEA_LEASE_TTL), got %s", p.leaseTTL)
	case (p.busURL == "") != (p.runnerURL == ""):
		return errors.New("nats provision: give both --bus-url and --runner-url (each account of Zoea's NATS has its own provisioning user), or neither and --url for a NATS without accounts")
	}
	if err := swarmbus.ValidateSwarm(p.swarm); err != nil {
		return fmt.Errorf("nats provision: --swarm: %w", err)
	}
	type part struct{ name, url, creds, what string }
	parts := []part{{"", p.url, p.creds, "the swarm's resources"}}
	if p.busURL != "" {
		parts = []part{
			{swarmbus.RoleBus, p.busURL, p.busCreds, "the bus's account (message stream, delivery consumer)"},
			{swarmbus.RoleRunner, p.runnerURL, p.runnerCreds, "the runners' account (lease and status buckets)"},
		}
	}
	log := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	for _, pt := range parts {
		done, err := swarmbus.Provision(ctx, pt.url, swarmbus.ProvisionOptions{Part: pt.name, Swarm: p.swarm, Replicas: p.replicas,
			LeaseTTL: p.leaseTTL, CredsFile: pt.creds, Name: "zoea-nats-provision", Logger: log})
		for _, d := range done {
			fmt.Fprintln(out, d)
		}
		if err != nil {
			return fmt.Errorf("nats provision: %s at %s: %w", pt.what, redactURLs(pt.url), err)
		}
	}
	swarm := "the default swarm"
	if p.swarm != "" {
		swarm = fmt.Sprintf("swarm %q", p.swarm)
	}
	fmt.Fprintf(out, "NATS is provisioned for %s (R%d, lease TTL %s): the bus and the runners can start.\n", swarm, p.replicas, p.leaseTTL)
	return nil
}

// redactURLs masks the credentials of each URL of a comma-separated list.
func redactURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, u := range parts {
		parts[i] = config.RedactURL(strings.TrimSpace(u))
	}
	return strings.Join(parts, ",")
}
