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

// PermissionsFor returns the least subject permissions of each Zoea service of swarm (Options.Swarm), keyed by
// service ("bus", "runner"). JetStream's API ($JS.API.>) is needed by both to ensure the stream and buckets and to
// use consumers and KV; the runner may not delete or purge streams. The JetStream API is not split by swarm, so
// credentials of one swarm can still reach another's stream through it: give each swarm its own NATS account
// where swarms must be isolated from each other, not only kept apart.
func PermissionsFor(swarm string) (map[string]SubjectPermissions, error) {
	n, err := NamesFor(swarm)
	if err != nil {
		return nil, err
	}
	return map[string]SubjectPermissions{
		// The bus publishes broadcasts and direct messages into the stream, consumes them, wakes runners and
		// publishes and watches events.
		"bus": {
			PublishAllow:   []string{n.Broadcast, n.DirectPrefix + ">", n.WakePrefix + ">", n.EventPrefix + ">", "$JS.API.>", "$JS.ACK.>", "$KV." + n.StatusBucket + ".>", "$KV." + n.LeaseBucket + ".>"},
			SubscribeAllow: []string{n.EventPrefix + ">", "_INBOX.>"},
		},
		// A runner holds leases and statuses, publishes events and wakes (an admin call on one replica wakes the
		// owner), and listens for wakes. It never writes messages: those go through the bus.
		"runner": {
			PublishAllow: []string{n.WakePrefix + ">", n.EventPrefix + ">", "$JS.API.>", "$KV." + n.LeaseBucket + ".>", "$KV." + n.StatusBucket + ".>"},
			PublishDeny: []string{n.Broadcast, n.DirectPrefix + ">",
				"$JS.API.STREAM.DELETE.>", "$JS.API.STREAM.PURGE.>", "$JS.API.STREAM.MSG.DELETE.>"},
			SubscribeAllow: []string{n.WakePrefix + ">", "_INBOX.>"},
		},
	}, nil
}
