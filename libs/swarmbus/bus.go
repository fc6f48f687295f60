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
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/propagation"

	"github.com/zoeaswarm/zoea/libs/retry"
)

// Names of the NATS resources of the default swarm (Options.Swarm empty); a named swarm's are derived from them
// (NamesFor). They are part of Zoea's wire protocol: changing one is a breaking change.
const (
	// StreamMessages holds broadcasts and direct messages until the delivery consumer acknowledges them.
	StreamMessages = "ZOEA_MESSAGES"
	// SubjectBroadcast carries broadcasts.
	SubjectBroadcast = "zoea.bcast"
	// LeaseBucket is the KV bucket of mysis leases.
	LeaseBucket = "zoea_leases"
	// StatusBucket is the KV bucket of live mysis statuses (see Statuses).
	StatusBucket = "zoea_status"
	// DeliveryConsumer is the durable consumer shared by all bus replicas.
	DeliveryConsumer = "bus-delivery"

	subjectDirectPrefix = "zoea.direct."
	subjectWakePrefix   = "zoea.wake."
	subjectEventPrefix  = "zoea.events."
	// swarmToken stands in for the mysis id of events that concern no single mysis.
	swarmToken = "_swarm"
)

// ensureAttemptTimeout bounds one attempt to ensure the stream and buckets at Connect.
const ensureAttemptTimeout = 5 * time.Second

// logConnectAttemptFailed is logged (at Warn) for every failed attempt to reach NATS, the first connection's included.
const logConnectAttemptFailed = "nats connect attempt failed; retrying"

// Defaults for Options.
const (
	DefaultLeaseTTL        = 15 * time.Second
	DefaultDuplicateWindow = 10 * time.Minute
	DefaultStreamMaxBytes  = 1 << 30
	DefaultPublishTimeout  = 5 * time.Second
)

// Options configure Connect. The zero value is usable.
type Options struct {
	// Name identifies the connection in NATS monitoring, e.g. "bus" or "runner-7f3c".
	Name string
	// Logger receives connection lifecycle and delivery logs; slog.Default() when nil.
	Logger *slog.Logger
	// LeaseTTL is the lease bucket's TTL. Zero keeps an existing bucket's TTL and creates a missing bucket with
	// DefaultLeaseTTL; a non-zero value different from the existing bucket's updates the bucket (every replica of a
	// deployment should agree on it). Processes that do not hold leases (the bus) should leave it zero.
	LeaseTTL time.Duration
	// DuplicateWindow is how long JetStream remembers message ids for deduplication; DefaultDuplicateWindow when zero.
	DuplicateWindow time.Duration
	// StreamMaxBytes caps the message stream; when full, new publishes fail (nothing acknowledged is dropped).
	StreamMaxBytes int64
	// Replicas is the JetStream replication factor of the message stream and both buckets (1 for a single server, 3
	// in a cluster). Connect creates each with it and updates an existing one whose replication differs, either way.
	Replicas int
	// PublishTimeout bounds one PubAck wait; a publish is retried with the same message id until its ctx is done.
	PublishTimeout time.Duration
	// Propagator injects and extracts trace context in NATS headers; W3C trace context + baggage when nil.
	Propagator propagation.TextMapPropagator
	// ReconnectMaxDelay caps the exponential reconnect backoff (default 5s). Reconnection never gives up.
	ReconnectMaxDelay time.Duration
	// CredsFile is an nkey seed file or a JWT creds file (ZOEA_NATS_CREDS); user/password or a token go in the URL.
	CredsFile string
	// Swarm names this swarm's stream, buckets and subjects (ZOEA_SWARM, see NamesFor and ValidateSwarm), so several
	// swarms can share one NATS server without seeing each other's messages, wakes, events, leases or statuses.
	// Every bus and runner of a swarm must use the same name. Empty keeps the default names.
	Swarm string
	// Role (RoleBus, RoleRunner) limits what this process ensures and uses to what its NATS user may touch
	// (PermissionsFor): the bus the message stream and its consumer, a runner the two buckets; replies come on the
	// role's own inbox prefix (InboxPrefix). Empty: everything, on the shared "_INBOX" (tools and tests against a
	// server without authorization).
	//
	// Whatever the role, a process only looks at a resource unless it is missing or differs from its settings;
	// only then does it try to create or update it, which a NATS without authorization (make dev, most tests)
	// allows and one with Zoea's refuses: there Connect fails with ErrNotProvisioned, whose sentence names
	// `zoea nats provision` (Provision).
	Role string

	// inboxRole, when set, replaces Role in the inbox prefix (Provision connects as a provisioning user).
	inboxRole string
	// record receives what ensure found and did to each resource (Provision's report).
	record func(Provisioned)
}

func (o *Options) setDefaults() {
	if o.Name == "" {
		o.Name = "zoea"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.DuplicateWindow <= 0 {
		o.DuplicateWindow = DefaultDuplicateWindow
	}
	if o.StreamMaxBytes <= 0 {
		o.StreamMaxBytes = DefaultStreamMaxBytes
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.PublishTimeout <= 0 {
		o.PublishTimeout = DefaultPublishTimeout
	}
	if o.Propagator == nil {
		o.Propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	if o.ReconnectMaxDelay <= 0 {
		o.ReconnectMaxDelay = 5 * time.Second
	}
}

// Bus is a connection to Zoea's NATS with its streams and bucket ensured. It is safe for concurrent use.
type Bus struct {
	opts  Options
	names Names
	log   *slog.Logger
	nc    *nats.Conn
	js    jetstream.JetStream
	kv    jetstream.KeyValue
	ttl   time.Duration
	// statusKV is the live-status bucket.
	statusKV jetstream.KeyValue

	// consuming is true while ConsumeMessages holds a working durable consumer; readiness checks read it, so a bus
	// whose consumer cannot be created (e.g. an unsupported server feature) never reports SERVING.
	consuming atomic.Bool

	mu          sync.Mutex
	onReconnect []func()
	// reconnectCh is closed (and replaced) after each reconnection, once the stream and buckets are ensured
	// again: watchers restart on it, since a watch of a bucket that the server lost and recreated stalls.
	reconnectCh chan struct{}
	// onViolation are told of every permission violation the server reports on this connection (see change).
	onViolation map[int]func(error)
	nextWatch   int
}

// Connect connects to url and ensures the message stream and the lease and status buckets exist. The connection reconnects
// forever with capped exponential backoff; if NATS is not reachable yet, Connect keeps trying until ctx is done, so
// a process may start before NATS. Creating the stream and bucket is idempotent and safe when many processes start
// at once.
func Connect(ctx context.Context, url string, opts Options) (*Bus, error) {
	names, err := NamesFor(opts.Swarm)
	if err != nil {
		return nil, err
	}
	if opts.Role != "" && opts.Role != RoleBus && opts.Role != RoleRunner {
		return nil, fmt.Errorf("swarmbus: unknown role %q (want %q, %q or empty)", opts.Role, RoleBus, RoleRunner)
	}
	opts.setDefaults()
	b := &Bus{opts: opts, names: names, log: opts.Logger.With("component", "swarmbus"), reconnectCh: make(chan struct{})}
	if names.Swarm != "" {
		b.log = b.log.With("swarm", names.Swarm)
	}
	maxDelay := opts.ReconnectMaxDelay
	auth, err := authOption(opts.CredsFile)
	if err != nil {
		return nil, err
	}
	natsOpts := []nats.Option{
		nats.Name(opts.Name),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(func(attempts int) time.Duration { return backoff(attempts, 100*time.Millisecond, maxDelay) }),
		nats.PingInterval(10 * time.Second),
		nats.MaxPingsOutstanding(3),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
			// Also called for each failed initial attempt (RetryOnFailedConnect): a process started before NATS says
			// why it is not ready yet.
			b.log.Warn(logConnectAttemptFailed, "err", err)
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				b.log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			b.log.Info("nats reconnected", "url", c.ConnectedUrlRedacted())
			go b.reconnected()
		}),
		nats.ConnectHandler(func(c *nats.Conn) {
			b.log.Info("nats connected", "url", c.ConnectedUrlRedacted())
		}),
		nats.ClosedHandler(func(*nats.Conn) { b.log.Info("nats connection closed") }),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			b.log.Warn("nats async error", "subject", subject, "err", err)
			if errors.Is(err, nats.ErrPermissionViolation) {
				b.violated(err)
			}
		}),
	}
	if auth != nil {
		natsOpts = append(natsOpts, auth)
	}
	if role := cmp.Or(opts.inboxRole, opts.Role); role != "" {
		natsOpts = append(natsOpts, nats.CustomInboxPrefix(InboxPrefix(names, role)))
	}
	nc, err := nats.Connect(url, natsOpts...)
	if err != nil {
		return nil, fmt.Errorf("swarmbus: connect %s: %w", url, err)
	}
	b.nc = nc
	b.js, err = jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("swarmbus: jetstream: %w", err)
	}
	for attempt := 1; ; attempt++ {
		// Bounded per attempt: a request the server drops (a subject this user may not publish) is never answered.
		// A refused request is said at once too (the server's permission violation cancels the attempt).
		actx, cancel := context.WithTimeout(ctx, ensureAttemptTimeout)
		actx, stop := b.untilViolation(actx)
		err = ExplainNoJetStream(b.ensure(actx))
		violation := context.Cause(actx)
		stop()
		cancel()
		if err == nil {
			break
		}
		if errors.Is(err, ErrNotProvisioned) {
			nc.Close()
			return nil, err
		}
		if !errors.Is(violation, nats.ErrPermissionViolation) {
			violation = nil
		}
		if authRefused(nc.LastError()) || authRefused(err) {
			nc.Close()
			return nil, fmt.Errorf("swarmbus: NATS refused this service's credentials (set user and password or a token in ZOEA_NATS_URL, or an nkey or creds file in ZOEA_NATS_CREDS; see docs/OPERATIONS.md): %w", cmpErr(nc.LastError(), err))
		}
		if last := cmpErr(violation, nc.LastError()); errors.Is(last, nats.ErrPermissionViolation) {
			nc.Close()
			return nil, fmt.Errorf("swarmbus: this NATS user may not use the swarm's stream or buckets (give it swarmbus.PermissionsFor(%q)[%q], docs/OPERATIONS.md; check ZOEA_SWARM): %w", names.Swarm, cmp.Or(opts.inboxRole, opts.Role), last)
		}
		var apiErr *jetstream.APIError
		if opts.record != nil && errors.As(err, &apiErr) && apiErr.Code != 503 {
			// Provisioning: the server refused the config itself (replicas on a single server, say); no retry helps.
			nc.Close()
			return nil, fmt.Errorf("swarmbus: NATS refused the swarm's resources as configured: %w", err)
		}
		if ctx.Err() != nil {
			nc.Close()
			return nil, fmt.Errorf("swarmbus: ensure stream and bucket: %w (last error: %w)", ctx.Err(), err)
		}
		b.log.Warn("nats not ready; retrying", "url", url, "attempt", attempt, "err", err)
		if !sleep(ctx, backoff(attempt, 200*time.Millisecond, maxDelay)) {
			nc.Close()
			return nil, fmt.Errorf("swarmbus: ensure stream and bucket: %w (last error: %w)", ctx.Err(), err)
		}
	}
	return b, nil
}

// Close drains subscriptions and closes the connection.
func (b *Bus) Close() {
	if err := b.nc.Drain(); err != nil {
		b.nc.Close()
	}
}

// Ready reports whether the connection is up and JetStream answers (about the message stream, or, for a runner,
// the lease bucket's stream); services use it as a readiness check.
func (b *Bus) Ready(ctx context.Context) error {
	if s := b.nc.Status(); s != nats.CONNECTED {
		return fmt.Errorf("nats %s", s)
	}
	name := b.names.Stream
	if b.opts.Role == RoleRunner {
		name = "KV_" + b.names.LeaseBucket
	}
	if _, err := b.js.Stream(ctx, name); err != nil {
		return fmt.Errorf("jetstream stream %s: %w", name, ExplainNoJetStream(err))
	}
	return nil
}

// Names are the NATS resources this bus uses (Options.Swarm).
func (b *Bus) Names() Names { return b.names }

// LeaseTTL is the lease bucket's TTL as found or set at Connect.
func (b *Bus) LeaseTTL() time.Duration { return b.ttl }

// OnReconnect registers fn to run (in its own goroutine) after every reconnection, once the stream and bucket are
// ensured again. Core NATS messages published while disconnected — wakes and events — are lost, so a runner
// registers a reconciliation of all its myses here.
func (b *Bus) OnReconnect(fn func()) {
	b.mu.Lock()
	b.onReconnect = append(b.onReconnect, fn)
	b.mu.Unlock()
}

func (b *Bus) reconnected() {
	// A NATS server restarted without its store lost the stream: recreate it before anyone publishes again.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.ensure(ctx); err != nil {
		b.log.Error("re-ensuring stream and bucket after reconnect", "err", err)
	}
	b.mu.Lock()
	fns := append([]func(){}, b.onReconnect...)
	close(b.reconnectCh)
	b.reconnectCh = make(chan struct{})
	b.mu.Unlock()
	for _, fn := range fns {
		go fn()
	}
}

// nextReconnect returns a channel closed after the next reconnection (see reconnectCh).
func (b *Bus) nextReconnect() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reconnectCh
}

func (b *Bus) streamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        b.names.Stream,
		Description: "Zoea broadcasts and direct messages awaiting delivery to the memory service",
		Subjects:    []string{b.names.Broadcast, b.names.DirectPrefix + "*"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    b.opts.Replicas,
		Duplicates:  b.opts.DuplicateWindow,
		MaxBytes:    b.opts.StreamMaxBytes,
		MaxMsgs:     -1,
		Discard:     jetstream.DiscardNew,
		// No MaxAge: an acknowledged broadcast waits for delivery however long the bus is away.
	}
}

// ensure makes sure of the stream and the lease and status buckets this process's role uses: it looks at each
// and creates or updates it only when it is missing or differs from this process's settings. The server treats a
// create with an identical config as a no-op, so concurrent starters converge; a starter that loses a create race
// reads what the winner made.
func (b *Bus) ensure(ctx context.Context) error {
	if b.opts.Role != RoleRunner {
		if err := b.ensureStream(ctx); err != nil {
			return err
		}
	}
	if b.opts.Role == RoleBus {
		return nil
	}
	if err := b.ensureBucket(ctx); err != nil {
		return err
	}
	return b.ensureStatusBucket(ctx)
}

// ErrNotProvisioned reports that a resource of the swarm is missing or differs from this process's settings and
// its NATS user was refused when it tried to create or update it: on a NATS with Zoea's authorization only the
// provisioning step (`zoea nats provision`, Provision) may. Errors that wrap it say which resource and what to run.
var ErrNotProvisioned = errors.New("swarmbus: not provisioned")

type provisionError struct {
	what string
	err  error
}

func (e *provisionError) Error() string {
	return fmt.Sprintf("swarmbus: %s, and this service's NATS user may not create or change it: run `zoea nats provision` "+
		"with the provisioning users and the same ZOEA_SWARM, ZOEA_NATS_REPLICAS and ZOEA_LEASE_TTL "+
		"(docs/OPERATIONS.md, \"NATS authentication\"): %v", e.what, e.err)
}

func (e *provisionError) Is(target error) bool { return target == ErrNotProvisioned }
func (e *provisionError) Unwrap() error        { return e.err }

// change runs f, a create or update of a resource (what says which and why), and turns a refusal into
// ErrNotProvisioned at once: the server drops a request whose subject the user may not publish and answers
// nothing, so without this f would wait until ctx ends.
func (b *Bus) change(ctx context.Context, what string, f func(context.Context) error) error {
	ctx, stop := b.untilViolation(ctx)
	defer stop()
	err := f(ctx)
	if err == nil {
		return nil
	}
	for _, cause := range []error{context.Cause(ctx), b.nc.LastError()} {
		if errors.Is(cause, nats.ErrPermissionViolation) && strings.Contains(cause.Error(), "Publish to \"$JS.API.") {
			return &provisionError{what: what, err: cause}
		}
	}
	if cause := context.Cause(ctx); errors.Is(cause, nats.ErrPermissionViolation) {
		return cause
	}
	return err
}

// untilViolation returns ctx cancelled, with the violation as its cause, when the server reports a permission
// violation on this connection, and a func to stop watching.
func (b *Bus) untilViolation(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	b.mu.Lock()
	if b.onViolation == nil {
		b.onViolation = map[int]func(error){}
	}
	id := b.nextWatch
	b.nextWatch++
	b.onViolation[id] = func(err error) { cancel(err) }
	b.mu.Unlock()
	return ctx, func() {
		b.mu.Lock()
		delete(b.onViolation, id)
		b.mu.Unlock()
		cancel(nil)
	}
}

// violated tells every watcher (untilViolation) that the server refused something of this connection.
func (b *Bus) violated(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, f := range b.onViolation {
		f(err)
	}
}

// note reports what ensure found and did to a resource: Provision collects it; a service logs every change.
func (b *Bus) note(p Provisioned) {
	if b.opts.record != nil {
		b.opts.record(p)
	}
	if p.Action != ActionUnchanged {
		b.log.Info(p.Action+" "+p.Kind, "name", p.Name, "config", p.Detail)
	}
}

func (b *Bus) ensureStream(ctx context.Context) error {
	cfg := b.streamConfig()
	detail := fmt.Sprintf("R%d", cfg.Replicas)
	s, err := b.js.Stream(ctx, b.names.Stream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		err := b.change(ctx, "the message stream "+b.names.Stream+" is missing", func(ctx context.Context) error {
			_, err := b.js.CreateStream(ctx, cfg)
			return err
		})
		if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("create stream %s: %w", b.names.Stream, err)
		}
		b.note(Provisioned{Kind: "stream", Name: b.names.Stream, Action: ActionCreated, Detail: detail})
	case err != nil:
		return fmt.Errorf("stream %s: %w", b.names.Stream, err)
	default:
		have := s.CachedInfo().Config
		if diff := streamDiff(have, cfg); diff != "" {
			err := b.change(ctx, "the message stream "+b.names.Stream+" differs ("+diff+")", func(ctx context.Context) error {
				_, err := b.js.UpdateStream(ctx, cfg)
				return err
			})
			if err != nil {
				return fmt.Errorf("update stream %s: %w", b.names.Stream, err)
			}
			b.note(Provisioned{Kind: "stream", Name: b.names.Stream, Action: ActionUpdated, Detail: detail + "; was " + diff})
		} else {
			b.note(Provisioned{Kind: "stream", Name: b.names.Stream, Action: ActionUnchanged, Detail: detail})
		}
	}
	return nil
}

// streamDiff says how the message stream's config have differs from want in what Zoea sets, or "" when it does
// not: subjects, retention, limits, replication, and anything that would send its messages elsewhere or take
// others in (republish, sources, mirror), which only an administrator could have added.
func streamDiff(have, want jetstream.StreamConfig) string {
	var d []string
	if !slices.Equal(slices.Sorted(slices.Values(have.Subjects)), slices.Sorted(slices.Values(want.Subjects))) {
		d = append(d, fmt.Sprintf("subjects %v, want %v", have.Subjects, want.Subjects))
	}
	if have.Retention != want.Retention {
		d = append(d, fmt.Sprintf("retention %s, want %s", have.Retention, want.Retention))
	}
	if have.Duplicates != want.Duplicates {
		d = append(d, fmt.Sprintf("duplicate window %s, want %s", have.Duplicates, want.Duplicates))
	}
	if have.MaxBytes != want.MaxBytes || have.MaxMsgs != want.MaxMsgs || have.MaxAge != want.MaxAge || have.Discard != want.Discard {
		d = append(d, fmt.Sprintf("limits max_bytes %d max_msgs %d max_age %s discard %s, want %d %d %s %s",
			have.MaxBytes, have.MaxMsgs, have.MaxAge, have.Discard, want.MaxBytes, want.MaxMsgs, want.MaxAge, want.Discard))
	}
	if have.Replicas != want.Replicas {
		d = append(d, fmt.Sprintf("replicas %d, want %d", have.Replicas, want.Replicas))
	}
	if have.RePublish != nil || have.Mirror != nil || len(have.Sources) > 0 {
		d = append(d, "republish, mirror or sources set")
	}
	return strings.Join(d, "; ")
}

// ensureStatusBucket creates the status bucket, or adopts an existing one, updating it only when its replication
// differs from Options.Replicas (nothing else in its config is tuned by a deployment, and an update would only race
// other starters).
func (b *Bus) ensureStatusBucket(ctx context.Context) error {
	name := b.names.StatusBucket
	detail := fmt.Sprintf("R%d", b.opts.Replicas)
	kv, err := b.js.KeyValue(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		err = b.change(ctx, "the status bucket "+name+" is missing", func(ctx context.Context) error {
			kv, err = b.js.CreateKeyValue(ctx, b.statusBucketConfig())
			return err
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = b.js.KeyValue(ctx, name)
		} else if err == nil {
			b.note(Provisioned{Kind: "bucket", Name: name, Action: ActionCreated, Detail: detail})
			kv, err = b.js.KeyValue(ctx, name)
			if err == nil {
				b.setStatusBucket(kv)
				return nil
			}
		}
	}
	if err != nil {
		return fmt.Errorf("status bucket %s: %w", name, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return fmt.Errorf("status bucket %s status: %w", name, err)
	}
	if have, tampered := bucketReplicas(st), bucketDiff(st, name, 1); have != b.opts.Replicas || tampered != "" {
		what := fmt.Sprintf("the status bucket %s has %d replicas, this service wants %d", name, have, b.opts.Replicas)
		if tampered != "" {
			what = fmt.Sprintf("the status bucket %s differs (%s)", name, tampered)
		}
		err := b.change(ctx, what, func(ctx context.Context) error {
			kv, err = b.js.UpdateKeyValue(ctx, b.statusBucketConfig())
			return err
		})
		if err != nil {
			return fmt.Errorf("set replicas of status bucket %s to %d: %w", name, b.opts.Replicas, err)
		}
		b.note(Provisioned{Kind: "bucket", Name: name, Action: ActionUpdated, Detail: fmt.Sprintf("%s; was R%d %s", detail, have, tampered)})
	} else {
		b.note(Provisioned{Kind: "bucket", Name: name, Action: ActionUnchanged, Detail: detail})
	}
	b.setStatusBucket(kv)
	return nil
}

func (b *Bus) setStatusBucket(kv jetstream.KeyValue) {
	b.mu.Lock()
	b.statusKV = kv
	b.mu.Unlock()
}

func (b *Bus) statusBucketConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      b.names.StatusBucket,
		Description: "Zoea live mysis statuses: key mysis.<id>, value the JSON status its runner replica last wrote",
		History:     1,
		Storage:     jetstream.MemoryStorage,
		Replicas:    b.opts.Replicas,
	}
}

// bucketReplicas is the replication factor of a bucket's stream (0 when the status does not say).
func bucketReplicas(st jetstream.KeyValueStatus) int {
	if s, ok := st.(interface{ StreamInfo() *jetstream.StreamInfo }); ok && s.StreamInfo() != nil {
		return s.StreamInfo().Config.Replicas
	}
	return 0
}

// errNoBuckets: the bus role neither ensures nor may use the buckets.
var errNoBuckets = errors.New("swarmbus: a bus connected with Role bus has no lease or status bucket (they are the runners'; see PermissionsFor)")

// statusBucket is the status bucket, or errNoBuckets.
func (b *Bus) statusBucket() (jetstream.KeyValue, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.statusKV == nil {
		return nil, errNoBuckets
	}
	return b.statusKV, nil
}

func (b *Bus) ensureBucket(ctx context.Context) error {
	name := b.names.LeaseBucket
	want := b.opts.LeaseTTL
	created := false
	kv, err := b.js.KeyValue(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		ttl := want
		if ttl <= 0 {
			ttl = DefaultLeaseTTL
		}
		markers := true
		err = b.change(ctx, "the lease bucket "+name+" is missing", func(ctx context.Context) error {
			kv, err = b.js.CreateKeyValue(ctx, b.bucketConfig(ttl, true))
			if errors.Is(err, jetstream.ErrLimitMarkerTTLNotSupported) {
				// NATS before 2.11 (Debian 12 ships 2.9) has no expiry markers: leases still expire, but watchers do
				// not hear of it, so runners find free leases by their periodic acquire sweep instead.
				b.log.Warn("NATS server has no limit markers; lease expiries are found by polling", "bucket", name)
				markers = false
				kv, err = b.js.CreateKeyValue(ctx, b.bucketConfig(ttl, false))
			}
			return err
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = b.js.KeyValue(ctx, name)
		} else if err == nil {
			b.note(Provisioned{Kind: "bucket", Name: name, Action: ActionCreated, Detail: leaseDetail(ttl, b.opts.Replicas, markers)})
			created = true
		}
	}
	if err != nil {
		return fmt.Errorf("lease bucket %s: %w", name, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return fmt.Errorf("lease bucket %s status: %w", name, err)
	}
	ttl := st.TTL()
	newTTL := ttl
	if want > 0 {
		newTTL = want
	}
	markers := st.LimitMarkerTTL() > 0
	// A TTL or a replication that differs from this process's setting is updated (every replica of a deployment
	// should agree on both); the stream and the status bucket follow Options.Replicas alike.
	have, tampered := bucketReplicas(st), bucketDiff(st, name, 1)
	switch {
	case newTTL != ttl || have != b.opts.Replicas || tampered != "":
		what := fmt.Sprintf("the lease bucket %s has TTL %s and %d replicas, this service wants %s and %d", name, ttl, have, newTTL, b.opts.Replicas)
		if tampered != "" {
			what = fmt.Sprintf("the lease bucket %s differs (%s)", name, tampered)
		}
		err := b.change(ctx, what, func(ctx context.Context) error {
			kv, err = b.js.UpdateKeyValue(ctx, b.bucketConfig(newTTL, markers))
			return err
		})
		if err != nil {
			return fmt.Errorf("set lease TTL to %s and replicas to %d: %w", newTTL, b.opts.Replicas, err)
		}
		b.note(Provisioned{Kind: "bucket", Name: name, Action: ActionUpdated,
			Detail: leaseDetail(newTTL, b.opts.Replicas, markers) + fmt.Sprintf("; was TTL %s, R%d %s", ttl, have, tampered)})
		ttl = newTTL
	case !created:
		b.note(Provisioned{Kind: "bucket", Name: name, Action: ActionUnchanged, Detail: leaseDetail(ttl, have, markers)})
	}
	b.mu.Lock()
	b.kv, b.ttl = kv, ttl
	b.mu.Unlock()
	return nil
}

func leaseDetail(ttl time.Duration, replicas int, markers bool) string {
	d := fmt.Sprintf("TTL %s, R%d", ttl, replicas)
	if !markers {
		d += ", no expiry markers (NATS < 2.11)"
	}
	return d
}

func (b *Bus) bucketConfig(ttl time.Duration, markers bool) jetstream.KeyValueConfig {
	cfg := jetstream.KeyValueConfig{
		Bucket:      b.names.LeaseBucket,
		Description: "Zoea mysis leases: key mysis.<id>, value the holding runner replica",
		TTL:         ttl,
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    b.opts.Replicas,
	}
	if markers {
		// Markers make an expiry visible to watchers, so a replica learns at once that a lease is free.
		cfg.LimitMarkerTTL = max(ttl, time.Second)
	}
	return cfg
}

func (b *Bus) bucket() jetstream.KeyValue {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.kv
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func cmpErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// backoff is the delay after the attempt-th consecutive failure: the shared retry rule (libs/retry) with up to
// 20% jitter downwards, from base up to maxDelay.
func backoff(attempt int, base, maxDelay time.Duration) time.Duration {
	return retry.Policy{Initial: base, Max: maxDelay, Jitter: 0.2}.Delay(attempt)
}
