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

// Roles: which of a swarm's NATS resources a process uses (Options.Role), matching its NATS user's permissions
// (PermissionsFor), and the provisioning step's two users (Provision), which alone may create or change them.
const (
	// RoleBus publishes broadcasts and direct messages into the message stream, delivers them through the durable
	// consumer, wakes runners and watches events. It never touches the lease and status buckets, and on a NATS with
	// Zoea's authorization it cannot create or change the stream or the consumer either: Provision does.
	RoleBus = "bus"
	// RoleRunner holds leases, writes statuses, publishes wakes and events and listens for wakes. It never touches
	// the message stream, and on a NATS with Zoea's authorization it cannot create or change the buckets: Provision
	// does.
	RoleRunner = "runner"
	// RoleProvisionBus is the provisioning user of the bus's account: it creates and reconciles the message stream
	// and its delivery consumer (Provision with Part RoleBus), and uses nothing.
	RoleProvisionBus = "provision-bus"
	// RoleProvisionRunner is the provisioning user of the runners' account: it creates and reconciles the lease and
	// status buckets (Provision with Part RoleRunner), and uses nothing.
	RoleProvisionRunner = "provision-runner"
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

// Permissions are the least subject permissions of each Zoea NATS user of the default swarm, for a NATS
// authorization config (see docs/OPERATIONS.md); PermissionsFor gives a named swarm's.
var Permissions = mustPermissions("")

func mustPermissions(swarm string) map[string]SubjectPermissions {
	p, err := PermissionsFor(swarm)
	if err != nil {
		panic(err)
	}
	return p
}

// PermissionsFor returns the least subject permissions of each Zoea NATS user of swarm (Options.Swarm), keyed by
// role (RoleBus, RoleRunner, RoleProvisionBus, RoleProvisionRunner): an allow list of exactly the subjects each
// uses, JetStream's API named per stream and consumer.
//
// No service may create, update or delete a stream or a bucket: a user that may update a stream's config can add
// a republish, a source, a mirror or a subject to it, or shrink its limits, and so forge or read what other
// services trust. The provisioning users create and reconcile them at deploy time (Provision, `zoea nats
// provision`). The bus uses the message stream and the provisioned delivery consumer (it may not create one:
// a consumer's config could name any deliver subject) and nothing of the buckets; a runner uses the two buckets
// (gets, writes, and watches, which are ordered push consumers it creates) and nothing of the message stream.
//
// Allow lists alone cannot keep one service's data out of the other's stream: a reply subject is the requester's
// choice, and JetStream answers a direct get, a publish or a pull by sending to it, so a runner asking for its own
// KV value with the reply subject of a broadcast would have the server publish a forged broadcast into the message
// stream, and a runner's push consumer can name such a subject as its deliver subject. The two services therefore
// live in NATS accounts of their own (AccountsFor): what the server sends on a runner's behalf stays in the
// runners' account, which holds no stream of the bus's, and the accounts share only the wakes (bus → runners) and
// the events (runners → bus), which each side may publish anyway. Each role receives replies on its own inbox
// prefix (InboxPrefix). Swarms are kept apart the same way: one swarm's users reach none of another swarm's
// resources.
func PermissionsFor(swarm string) (map[string]SubjectPermissions, error) {
	n, err := NamesFor(swarm)
	if err != nil {
		return nil, err
	}
	const api = "$JS.API."
	stream, consumer := n.Stream, n.Consumer
	bus := []string{n.Broadcast, n.DirectPrefix + ">", n.WakePrefix + ">", n.EventPrefix + ">",
		api + "STREAM.INFO." + stream,
		api + "CONSUMER.INFO." + stream + "." + consumer,
		api + "CONSUMER.MSG.NEXT." + stream + "." + consumer,
		"$JS.ACK." + stream + "." + consumer + ".>",
	}
	provisionBus := []string{
		// Account info: the client checks the server's API level before it creates or updates.
		api + "INFO",
		api + "STREAM.INFO." + stream, api + "STREAM.CREATE." + stream, api + "STREAM.UPDATE." + stream,
		api + "CONSUMER.INFO." + stream + "." + consumer, api + "CONSUMER.CREATE." + stream + "." + consumer,
	}
	runner := []string{n.WakePrefix + ">", n.EventPrefix + ">"}
	provisionRunner := []string{api + "INFO"}
	for _, bucket := range []string{n.LeaseBucket, n.StatusBucket} {
		kv := "KV_" + bucket
		runner = append(runner,
			api+"STREAM.INFO."+kv,
			// Reads: direct gets (by key, or by sequence) and, on a bucket without direct access, the stream's get.
			api+"DIRECT.GET."+kv, api+"DIRECT.GET."+kv+".>", api+"STREAM.MSG.GET."+kv,
			// Watches: an ordered push consumer, created by name and filter (NATS 2.9+), the filter always one of
			// the bucket's keys (a consumer filtered on another stream's subjects is refused); its flow control
			// replies, and its deletion when the watch ends. Its deliver subject is the runner's choice, which is
			// why the runners have an account of their own.
			api+"CONSUMER.CREATE."+kv+".*.$KV."+bucket+".>", api+"CONSUMER.INFO."+kv+".>",
			api+"CONSUMER.DELETE."+kv+".>", "$JS.FC."+kv+".>",
			// Writes: put, create, update, delete of keys.
			"$KV."+bucket+".>",
		)
		provisionRunner = append(provisionRunner, api+"STREAM.INFO."+kv, api+"STREAM.CREATE."+kv, api+"STREAM.UPDATE."+kv)
	}
	own := func(role string) []string { return []string{InboxPrefix(n, role) + ".>"} }
	return map[string]SubjectPermissions{
		RoleBus: {
			PublishAllow:   bus,
			SubscribeAllow: []string{n.EventPrefix + ">", InboxPrefix(n, RoleBus) + ".>"},
		},
		RoleRunner: {
			PublishAllow:   runner,
			SubscribeAllow: []string{n.WakePrefix + ">", InboxPrefix(n, RoleRunner) + ".>"},
		},
		RoleProvisionBus:    {PublishAllow: provisionBus, SubscribeAllow: own(RoleProvisionBus)},
		RoleProvisionRunner: {PublishAllow: provisionRunner, SubscribeAllow: own(RoleProvisionRunner)},
	}, nil
}

// Account is one of the two NATS accounts of a swarm on a NATS with Zoea's authorization (deploy/nats/nats.conf):
// its name, the roles whose users belong to it (keys of PermissionsFor) and the subjects it shares with the other
// account as stream exports and imports.
type Account struct {
	Name string
	// Roles are the users of the account, by role.
	Roles []string
	// Exports are subjects exported, as streams, to the other account only.
	Exports []string
	// Imports are the other account's exports this account takes, on the same subjects.
	Imports []Import
}

// Import is a stream import: Subject of Account, seen under the same subject.
type Import struct {
	Account, Subject string
}

// Accounts are the NATS accounts of the default swarm (AccountsFor).
var Accounts = mustAccounts("")

func mustAccounts(swarm string) []Account {
	a, err := AccountsFor(swarm)
	if err != nil {
		panic(err)
	}
	return a
}

// AccountsFor returns the two NATS accounts of swarm: the bus's (ZOEA_BUS; ZOEA_<SWARM>_BUS for a named swarm),
// holding the message stream and its consumer, with the bus and its provisioning user; and the runners'
// (ZOEA_RUNNER, ZOEA_<SWARM>_RUNNER), holding the lease and status buckets, with the runner and its provisioning
// user. The bus's account exports the wakes to the runners'; the runners' exports the events to the bus's. See
// PermissionsFor for why they are apart.
func AccountsFor(swarm string) ([]Account, error) {
	n, err := NamesFor(swarm)
	if err != nil {
		return nil, err
	}
	prefix := "ZOEA_"
	if swarm != "" {
		prefix += strings.ToUpper(swarm) + "_"
	}
	busAcc, runnerAcc := prefix+"BUS", prefix+"RUNNER"
	return []Account{
		{Name: busAcc, Roles: []string{RoleBus, RoleProvisionBus}, Exports: []string{n.WakePrefix + ">"},
			Imports: []Import{{Account: runnerAcc, Subject: n.EventPrefix + ">"}}},
		{Name: runnerAcc, Roles: []string{RoleRunner, RoleProvisionRunner}, Exports: []string{n.EventPrefix + ">"},
			Imports: []Import{{Account: busAcc, Subject: n.WakePrefix + ">"}}},
	}, nil
}
