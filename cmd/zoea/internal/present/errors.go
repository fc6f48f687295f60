package present

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zoeaswarm/zoea/libs/server"
)

// Sentence is an error already phrased for a person; Explain passes it through unchanged.
type Sentence struct{ msg string }

func (e Sentence) Error() string { return e.msg }

// Sentencef makes a Sentence.
func Sentencef(format string, args ...any) error { return Sentence{fmt.Sprintf(format, args...)} }

// Subject is what a command was about, so an error can name it: the mysis a command names, or the new name of
// `create`; service and addr say whom the command talked to.
type Subject struct {
	Mysis   string
	Create  bool
	Service string
	Addr    string
	Known   []string // every mysis name, for "did you mean"; nil when unknown
}

// Explain turns a gRPC error into a sentence: no "rpc error: code = …", no SQL constraint names.
func Explain(err error, s Subject) error {
	if err == nil {
		return nil
	}
	var done Sentence
	if errors.As(err, &done) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return Sentencef("interrupted")
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	msg := st.Message()
	switch st.Code() {
	case codes.NotFound:
		if s.Mysis != "" {
			if guess := Closest(s.Mysis, s.Known); guess != "" {
				return Sentencef("no mysis named %s (did you mean %s?)", s.Mysis, guess)
			}
			return Sentencef("no mysis named %s (zoea list shows them all)", s.Mysis)
		}
		return Sentencef("not found: %s", msg)
	case codes.AlreadyExists:
		if s.Create && s.Mysis != "" {
			return Sentencef("a mysis named %s already exists", s.Mysis)
		}
		return Sentencef("already exists: %s", trimSQL(msg))
	case codes.InvalidArgument:
		field := ""
		for _, d := range st.Details() {
			if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 {
				field = br.GetFieldViolations()[0].GetField()
				msg = br.GetFieldViolations()[0].GetDescription()
			}
		}
		msg = strings.TrimPrefix(msg, field+": ")
		if field != "" {
			return Sentencef("%s: %s", flagName(field), msg)
		}
		return Sentencef("%s", msg)
	case codes.FailedPrecondition:
		return Sentencef("%s", msg)
	case codes.Unavailable:
		if answered(st) {
			// The service is up and says in a sentence what it needs and lacks (libs/server relays a peer it
			// cannot reach as a sentence too).
			return Sentencef("the %s answered: %s", serviceName(s.Service), msg)
		}
		return Sentencef("cannot reach the %s at %s: is the swarm running? (make dev, or docker compose up; --%s or ZOEA_%s_ADDR point elsewhere)",
			serviceName(s.Service), s.Addr, s.Service, strings.ToUpper(s.Service))
	case codes.DeadlineExceeded:
		return Sentencef("the %s at %s did not answer in time (--timeout)", serviceName(s.Service), s.Addr)
	case codes.Unauthenticated, codes.PermissionDenied:
		return Sentencef("the %s refused the call: %s (set ZOEA_ADMIN_TOKEN or --token to the swarm's admin token)", serviceName(s.Service), msg)
	}
	return Sentencef("%s: %s", s.Service, trimSQL(msg))
}

// answered reports whether a Zoea service sent st itself (its errors carry an ErrorInfo in Zoea's domain), rather
// than gRPC reporting that the service could not be reached.
func answered(st *status.Status) bool {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == server.ErrorDomain {
			return true
		}
	}
	return false
}

// serviceName is a service as a sentence names it: "memory service", "runner", "bus".
func serviceName(service string) string {
	if service == "memory" {
		return "memory service"
	}
	return service
}

// flagName shows an API field as the CLI flag that sets it.
func flagName(field string) string {
	switch field {
	case "provider", "model", "temperature", "limit", "state":
		return "--" + field
	case "system_prompt":
		return "--system-prompt"
	case "spacemolt_endpoint":
		return "--endpoint"
	case "mysis", "name":
		return "mysis name"
	}
	return field
}

// trimSQL drops a database's diagnostics from a message a server should not have sent.
func trimSQL(msg string) string {
	if i := strings.Index(msg, " (SQLSTATE"); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

// Closest is the known name nearest to name, when it is near enough to be a typo.
func Closest(name string, known []string) string {
	best, bestD := "", 1<<30
	for _, k := range known {
		if d := EditDistance(strings.ToLower(name), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	limit := 2
	if len([]rune(name)) <= 4 {
		limit = 1
	}
	if bestD == 0 || bestD > limit {
		return ""
	}
	return best
}

// EditDistance is the Damerau–Levenshtein (optimal string alignment) distance: a swapped pair counts once, so
// "scuot" is one edit from "scout".
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range rb {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
