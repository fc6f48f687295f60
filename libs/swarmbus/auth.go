package swarmbus

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
)

// NATS authentication. User/password and token go in the URL (nats://user:pass@host:4222, nats://token@host:4222);
// an nkey seed file or a JWT creds file is named by Options.CredsFile (ZOEA_NATS_CREDS in every service). Which
// subjects each service may use is listed in Permissions below and in docs/OPERATIONS.md; the NATS server enforces
// them (a runner's credentials cannot publish broadcasts or direct messages, only the bus's can).

// authOption turns Options.CredsFile into a nats option: a creds file (JWT + seed) or a bare nkey seed file.
func authOption(path string) (nats.Option, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("swarmbus: ZOEA_NATS_CREDS: %w", err)
	}
	if bytes.Contains(b, []byte("BEGIN NATS USER JWT")) {
		return nats.UserCredentials(path), nil
	}
	opt, err := nats.NkeyOptionFromSeed(path)
	if err != nil {
		return nil, fmt.Errorf("swarmbus: ZOEA_NATS_CREDS %s is neither a creds file nor an nkey seed: %w", path, err)
	}
	return opt, nil
}

// authRefused reports whether the server refused the connection's credentials: retrying cannot help, so Connect
// stops with a sentence that says what to set instead of retrying until its deadline.
func authRefused(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) {
		return true
	}
	return strings.Contains(strings.ToLower(err.Error()), "authorization violation")
}

// SubjectPermissions is what a NATS user may publish or subscribe to.
type SubjectPermissions struct {
	PublishAllow, PublishDeny, SubscribeAllow []string
}

// Roles: which of a swarm's NATS resources a process ensures and uses (Options.Role), matching its NATS user's
// permissions (PermissionsFor).
const (
	// RoleBus publishes broadcasts and direct messages into the message stream, delivers them through the durable
	// consumer, wakes runners and watches events. It creates and reconciles the message stream and the consumer,
	// and never touches the lease and status buckets.
	RoleBus = "bus"
	// RoleRunner holds leases, writes statuses, publishes wakes and events and listens for wakes. It creates and
	// reconciles the two buckets, and never touches the message stream.
	RoleRunner = "runner"
)

// InboxPrefix is the prefix of the reply subjects (JetStream API answers, KV watch deliveries) of a process of
// role in the swarm named by n, so its NATS user may subscribe to its own replies only: with the shared "_INBOX.>"
// a runner's credentials could read the bus's pulled messages. An empty role keeps NATS's "_INBOX".
func InboxPrefix(n Names, role string) string {
	if role == "" {
		return nats.InboxPrefix[:len(nats.InboxPrefix)-1]
	}
	return "_INBOX." + strings.TrimSuffix(n.Broadcast, ".bcast") + "." + role
}

// Permissions are the least subject permissions of each Zoea service of the default swarm, for a NATS
// authorization config (see docs/OPERATIONS.md); PermissionsFor gives a named swarm's.
var Permissions = mustPermissions("")

func mustPermissions(swarm string) map[string]SubjectPermissions {
	p, err := PermissionsFor(swarm)
	if err != nil {
		panic(err)
	}
	return p
}

// PermissionsFor returns the least subject permissions of each Zoea service of swarm (Options.Swarm), keyed by role
// ("bus", "runner"): an allow list of exactly the subjects each uses, JetStream's API named per stream and consumer.
// The bus may manage the message stream and its delivery consumer and nothing else of JetStream; a runner may
// manage and use the two KV buckets and nothing else, so it cannot reconfigure, read, purge or delete the message
// stream or its consumer, nor create streams (e.g. one capturing events). What a runner can still do with its
// buckets' configuration it could do to their data anyway: they are the runners' own state. Each role receives
// replies on its own inbox prefix (InboxPrefix). Swarms are kept apart the same way: one swarm's users reach none
// of another swarm's resources.
func PermissionsFor(swarm string) (map[string]SubjectPermissions, error) {
	n, err := NamesFor(swarm)
	if err != nil {
		return nil, err
	}
	const api = "$JS.API."
	stream, consumer := n.Stream, n.Consumer
	bus := []string{n.Broadcast, n.DirectPrefix + ">", n.WakePrefix + ">", n.EventPrefix + ">",
		api + "STREAM.INFO." + stream, api + "STREAM.CREATE." + stream, api + "STREAM.UPDATE." + stream,
		api + "CONSUMER.CREATE." + stream + "." + consumer, api + "CONSUMER.INFO." + stream + "." + consumer,
		api + "CONSUMER.MSG.NEXT." + stream + "." + consumer,
		"$JS.ACK." + stream + "." + consumer + ".>",
	}
	runner := []string{n.WakePrefix + ">", n.EventPrefix + ">",
		// Account info: the KV client checks the server's API level before creating or updating a bucket.
		api + "INFO",
	}
	for _, bucket := range []string{n.LeaseBucket, n.StatusBucket} {
		kv := "KV_" + bucket
		runner = append(runner,
			api+"STREAM.INFO."+kv, api+"STREAM.CREATE."+kv, api+"STREAM.UPDATE."+kv,
			// Reads: direct gets (by key, or by sequence) and, on a bucket without direct access, the stream's get.
			api+"DIRECT.GET."+kv, api+"DIRECT.GET."+kv+".>", api+"STREAM.MSG.GET."+kv,
			// Watches: an ordered push consumer (created by name and filter, or unnamed on older servers), its
			// flow control replies, and its deletion when the watch ends.
			api+"CONSUMER.CREATE."+kv, api+"CONSUMER.CREATE."+kv+".>", api+"CONSUMER.INFO."+kv+".>",
			api+"CONSUMER.DELETE."+kv+".>", "$JS.FC."+kv+".>",
			// Writes: put, create, update, delete of keys.
			"$KV."+bucket+".>",
		)
	}
	return map[string]SubjectPermissions{
		RoleBus: {
			PublishAllow:   bus,
			SubscribeAllow: []string{n.EventPrefix + ">", InboxPrefix(n, RoleBus) + ".>"},
		},
		RoleRunner: {
			PublishAllow:   runner,
			SubscribeAllow: []string{n.WakePrefix + ">", InboxPrefix(n, RoleRunner) + ".>"},
		},
	}, nil
}
