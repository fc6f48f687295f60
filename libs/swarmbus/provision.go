package swarmbus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Provisioning. On a NATS with Zoea's authorization (deploy/nats/nats.conf) no running service may create or
// change a stream, a bucket or the delivery consumer (PermissionsFor says why); a deployment runs Provision once
// (`zoea nats provision`: a compose one-shot job, a k8s Job) with the provisioning users before the services
// start, and again whenever ZOEA_NATS_REPLICAS or ZOEA_LEASE_TTL change. Services only look: when a resource is
// missing or differs from their settings they try to create or update it themselves, which works on a NATS
// without authorization (make dev, tests) and fails with ErrNotProvisioned on Zoea's.

// What Provision did to a resource (Provisioned.Action).
const (
	ActionCreated   = "created"
	ActionUpdated   = "updated"
	ActionUnchanged = "unchanged"
)

// Provisioned is one resource Provision made sure of.
type Provisioned struct {
	// Kind is "stream", "consumer" or "bucket".
	Kind, Name string
	// Action is ActionCreated, ActionUpdated or ActionUnchanged.
	Action string
	// Detail is its replication and, for the lease bucket, TTL; after an update, what it was.
	Detail string
}

func (p Provisioned) String() string {
	return fmt.Sprintf("%s %s %s (%s)", p.Kind, p.Name, p.Action, p.Detail)
}

// ProvisionOptions say which of a swarm's resources Provision makes sure of, with which settings, as which user.
type ProvisionOptions struct {
	// Part is RoleBus (the bus's account: the message stream and its delivery consumer), RoleRunner (the runners'
	// account: the lease and status buckets) or empty (all of them on one connection: a NATS without accounts).
	Part string
	// Swarm, Replicas and LeaseTTL are the services' ZOEA_SWARM, ZOEA_NATS_REPLICAS and ZOEA_LEASE_TTL: give
	// the same values, or the services find the resources differ from their settings and refuse to start.
	// Replicas 0 is 1; LeaseTTL 0 is DefaultLeaseTTL.
	Swarm    string
	Replicas int
	LeaseTTL time.Duration
	// CredsFile is an nkey seed or creds file of the provisioning user (user and password go in the URL).
	CredsFile string
	// Name identifies the connection in NATS monitoring; "zoea-provision" when empty.
	Name string
	// Logger receives connection logs; slog.Default() when nil.
	Logger *slog.Logger
}

// Provision creates, or reconciles with opts, the NATS resources of opts.Part of a swarm on the server at url,
// and reports each: the message stream and the bus's durable delivery consumer (Part RoleBus), the lease and
// status buckets (Part RoleRunner), or all four. A resource that exists with the same settings is left alone; one
// that differs (replication, lease TTL, or a republish, mirror, source, subject or limit someone added) is updated
// back. It waits for NATS until ctx is done, and fails at once with a sentence when NATS refuses the credentials
// or the user may not do what provisioning needs (PermissionsFor's provisioning roles).
func Provision(ctx context.Context, url string, opts ProvisionOptions) ([]Provisioned, error) {
	if opts.Part != "" && opts.Part != RoleBus && opts.Part != RoleRunner {
		return nil, fmt.Errorf("swarmbus: provision: unknown part %q (want %q, %q or empty for both)", opts.Part, RoleBus, RoleRunner)
	}
	if opts.Replicas < 0 {
		return nil, fmt.Errorf("swarmbus: provision: replicas %d (want 1 for one server, 3 in a cluster)", opts.Replicas)
	}
	if opts.LeaseTTL < 0 || (opts.LeaseTTL > 0 && opts.LeaseTTL < time.Second) {
		return nil, fmt.Errorf("swarmbus: provision: lease TTL %s (want at least 1s, as ZOEA_LEASE_TTL)", opts.LeaseTTL)
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	var (
		mu   sync.Mutex // a reconnection re-ensures on another goroutine
		done []Provisioned
	)
	o := Options{Name: cmp.Or(opts.Name, "zoea-provision"), Logger: opts.Logger, Swarm: opts.Swarm, Replicas: opts.Replicas,
		LeaseTTL: opts.LeaseTTL, CredsFile: opts.CredsFile, Role: opts.Part,
		record: func(p Provisioned) {
			mu.Lock()
			done = append(done, p)
			mu.Unlock()
		}}
	switch opts.Part {
	case RoleBus:
		o.inboxRole = RoleProvisionBus
	case RoleRunner:
		o.inboxRole = RoleProvisionRunner
	}
	b, err := Connect(ctx, url, o)
	if err != nil {
		return nil, provisionRefusal(err)
	}
	defer b.Close()
	var cerr error
	if opts.Part != RoleRunner {
		_, cerr = b.ensureConsumer(ctx, ConsumerOptions{})
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(done), provisionRefusal(cerr)
}

// provisionRefusal turns the services' "run zoea nats provision" into what the provisioning user lacks.
func provisionRefusal(err error) error {
	var pe *provisionError
	if errors.As(err, &pe) {
		return fmt.Errorf("swarmbus: provision: %s, and NATS refused this provisioning user the change: give it "+
			"swarmbus.PermissionsFor(swarm)[%q or %q] in the account of that resource (deploy/nats/nats.conf): %w",
			pe.what, RoleProvisionBus, RoleProvisionRunner, pe.err)
	}
	return err
}

// bucketDiff says how a bucket's stream differs from what a bucket of this history holds, "" when it does not:
// anything that would send its entries elsewhere (republish), take in another stream's (sources, mirror) or
// other subjects, or drop entries early (limits), which only an administrator could have set.
func bucketDiff(st jetstream.KeyValueStatus, bucket string, history int64) string {
	s, ok := st.(interface{ StreamInfo() *jetstream.StreamInfo })
	if !ok || s.StreamInfo() == nil {
		return ""
	}
	cfg := s.StreamInfo().Config
	var d []string
	if want := []string{"$KV." + bucket + ".>"}; !slices.Equal(cfg.Subjects, want) {
		d = append(d, fmt.Sprintf("subjects %v, want %v", cfg.Subjects, want))
	}
	if cfg.RePublish != nil || cfg.Mirror != nil || len(cfg.Sources) > 0 {
		d = append(d, "republish, mirror or sources set")
	}
	if cfg.MaxMsgs != -1 || cfg.MaxBytes != -1 || cfg.MaxMsgsPerSubject != history {
		d = append(d, fmt.Sprintf("limits max_msgs %d max_bytes %d history %d, want -1 -1 %d", cfg.MaxMsgs, cfg.MaxBytes, cfg.MaxMsgsPerSubject, history))
	}
	return strings.Join(d, "; ")
}

// ensureConsumer makes sure of the durable delivery consumer with opts, looking first: it is created or updated
// only when it is missing or differs (a push consumer, a filter, other limits), so a bus whose user may not create
// it (Zoea's authorization: Provision does) runs on the provisioned one.
func (b *Bus) ensureConsumer(ctx context.Context, opts ConsumerOptions) (jetstream.Consumer, error) {
	opts.setDefaults()
	want := b.consumerConfig(opts)
	detail := fmt.Sprintf("R%d, ack wait %s, max deliver %d", want.Replicas, want.AckWait, want.MaxDeliver)
	c, err := b.js.Consumer(ctx, b.names.Stream, opts.Durable)
	what := "the delivery consumer " + opts.Durable + " of " + b.names.Stream
	action := ActionCreated
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		what += " is missing"
	case err != nil:
		return nil, fmt.Errorf("consumer %s: %w", opts.Durable, err)
	default:
		diff := consumerDiff(c.CachedInfo().Config, want)
		if diff == "" {
			b.note(Provisioned{Kind: "consumer", Name: opts.Durable, Action: ActionUnchanged, Detail: detail})
			return c, nil
		}
		what += " differs (" + diff + ")"
		action, detail = ActionUpdated, detail+"; was "+diff
	}
	err = b.change(ctx, what, func(ctx context.Context) error {
		c, err = b.js.CreateOrUpdateConsumer(ctx, b.names.Stream, want)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("delivery consumer %s: %w", opts.Durable, err)
	}
	b.note(Provisioned{Kind: "consumer", Name: opts.Durable, Action: action, Detail: detail})
	return c, nil
}

// consumerDiff says how the delivery consumer's config have differs from want in what delivery relies on: a pull
// consumer of the whole stream, one message in flight, the ack rules and the replication.
func consumerDiff(have, want jetstream.ConsumerConfig) string {
	var d []string
	if have.DeliverSubject != "" {
		d = append(d, "a push consumer delivering to "+have.DeliverSubject)
	}
	if have.FilterSubject != "" || len(have.FilterSubjects) > 0 {
		d = append(d, "filtered")
	}
	if have.AckPolicy != want.AckPolicy || have.AckWait != want.AckWait || have.MaxDeliver != want.MaxDeliver || have.MaxAckPending != want.MaxAckPending {
		d = append(d, fmt.Sprintf("ack %s wait %s max deliver %d max ack pending %d, want %s %s %d %d",
			have.AckPolicy, have.AckWait, have.MaxDeliver, have.MaxAckPending, want.AckPolicy, want.AckWait, want.MaxDeliver, want.MaxAckPending))
	}
	if have.DeliverPolicy != want.DeliverPolicy {
		d = append(d, fmt.Sprintf("deliver policy %s, want %s", have.DeliverPolicy, want.DeliverPolicy))
	}
	if have.Replicas != want.Replicas && !(have.Replicas == 0 && want.Replicas == 1) {
		d = append(d, fmt.Sprintf("replicas %d, want %d", have.Replicas, want.Replicas))
	}
	return strings.Join(d, "; ")
}
