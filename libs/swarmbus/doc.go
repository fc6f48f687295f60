// Package swarmbus is the one place that knows Zoea's NATS protocol. The bus service and the runner both use it;
// nothing else in Zoea names a NATS subject, stream, consumer or KV bucket.
//
// # Subjects and storage
//
//	zoea.bcast              broadcasts        JetStream stream ZOEA_MESSAGES (work queue, file storage)
//	zoea.direct.<mysis>     direct messages   JetStream stream ZOEA_MESSAGES
//	zoea.wake.<mysis>       wake-up pokes     core NATS, fan-out to every subscriber
//	zoea.events.<mysis>     swarm events      core NATS, fan-out to every subscriber
//	KV zoea_leases          mysis leases      key "mysis.<id>" = holder id, bucket TTL = lease TTL
//	                        replica presence  key "replica.<holder>" = heartbeat time (Heartbeat, Leave, WatchSwarm)
//	KV zoea_status          live statuses     key "mysis.<id>" = JSON Status, in memory, one revision
//
// These are the default swarm's names. Several swarms can share one NATS server: each bus and runner of a swarm
// sets Options.Swarm (ZOEA_SWARM) to the swarm's name, say "alpha", and then uses zoea_alpha.bcast,
// zoea_alpha.direct.<mysis>, zoea_alpha.wake.<mysis>, zoea_alpha.events.<mysis>, the stream ZOEA_ALPHA_MESSAGES
// and the buckets zoea_alpha_leases and zoea_alpha_status (NamesFor). Nothing is shared between swarms: each has
// its own delivery consumer (named bus-delivery inside its own stream), leases, statuses, wakes and events.
//
// # Broadcasts and direct messages: durable, deduplicated, delivered in order
//
// PublishBroadcast and PublishDirect return only after JetStream's PubAck, so an acknowledged message is on disk
// and survives bus and NATS restarts. Each publish carries Nats-Msg-Id (the broadcast id, or "direct:" + message id),
// so a retried publish inside the stream's duplicate window is stored once. Outside that window the memory service
// is the last line of defence: RecordBroadcast is idempotent on the broadcast id and direct messages are appended
// with the idempotency key "direct:<id>", so a message reaches each mysis's memory exactly once whatever happens.
//
// The stream uses work-queue retention: a message stays until the delivery consumer acknowledges it, however long
// the bus is down (no MaxAge), and is removed afterwards, so the stream stays small. The single durable pull
// consumer (ConsumeMessages) is shared by all bus replicas and has MaxAckPending 1: messages are handled one at a
// time in publish order (a mission broadcast after another must land after it in every memory), and a message
// that is being retried — a nak with delay keeps it pending — holds back the ones behind it instead of being
// overtaken. Handlers are at-least-once; their effects must be idempotent, which the memory service guarantees.
//
// # Wake-ups: hints, not truth
//
// A wake tells the runner replica that owns a mysis to re-read it from the memory service and act (a new
// broadcast or direct message, start, stop, configure, delete). Wakes use core NATS: every runner replica
// subscribes to all of them and ignores the myses whose lease it does not hold. A wake is lost when nobody owns
// the mysis at that moment (its replica just died) or when the subscriber is disconnected. That is safe because the
// memory service is the truth: a runner MUST reconcile a mysis from memory whenever it acquires its lease (a new
// broadcast or direct message is already stored there before any wake is sent), and SHOULD reconcile every owned
// mysis after a NATS reconnect (see OnReconnect). A wake that arrives twice is harmless for the same reason.
//
// # Events: core NATS
//
// Events (state changes, appended memories, tool calls, errors, deliveries) are observations for the CLI/TUI and
// dashboards, not state: everything they describe is already stored in the memory service. They go over core NATS
// because a watcher wants them live and the WatchEvents API has no resume cursor, so retention would buy nothing
// while costing a disk write per tool call across a swarm of thousands; with no watcher they cost nothing.
// Events are protobuf-encoded busv1.Event with W3C trace context (traceparent, tracestate, baggage) in the NATS
// headers, so a trace crosses the runner → NATS → bus → client hops.
//
// # Leases
//
// Each mysis is owned by at most one runner replica at a time through the zoea_leases KV bucket. Acquire is a KV
// Create (only one creator wins); Renew is a KV Update against the revision this holder last wrote (a compare and
// set: anyone else's write in between makes it fail with ErrLeaseLost). The bucket's MaxAge is the lease TTL, so
// an entry that is not renewed disappears by itself; the bucket also keeps limit markers, so a Watch sees the expiry
// as a "free" event and a surviving replica can take the mysis over within the TTL. See Leases for the rules the
// runner must follow.
//
// Runner replicas also announce themselves in the same bucket (Heartbeat every TTL/3, Leave on a graceful stop), so
// each knows how many replicas share the swarm and can take its fair share. Presence needs no bucket or permission
// of its own. WatchSwarm reports leases and presence through one watcher, in the order they were written: a
// departing replica's Leave arrives before its releases.
//
// # Live statuses
//
// Each runner replica writes what its actors are doing (last action, credits, turns, last error) to the
// zoea_status bucket and watches the whole bucket, so an admin call that reaches any replica can describe any
// mysis. Statuses are observations like events, so the bucket is in memory; see Statuses.
//
// # Roles, permissions, provisioning and replication
//
// Options.Role splits the resources between the two services, matching their NATS users' allow lists
// (PermissionsFor): the bus uses the message stream and its delivery consumer, a runner the two buckets, and each
// receives replies on its own inbox prefix (InboxPrefix). On a NATS with Zoea's authorization the two services live
// in accounts of their own (AccountsFor), since a reply or deliver subject chosen by one could otherwise make the
// server publish into the other's stream, and neither may create or change a stream, bucket or consumer: Provision
// (`zoea nats provision`, at deploy time, as the provisioning users) does. A process looks at each resource it uses
// and creates or updates it only when it is missing or differs, following Options.Replicas (ZOEA_NATS_REPLICAS) and
// the lease TTL; where its user is refused it stops with ErrNotProvisioned.
package swarmbus
