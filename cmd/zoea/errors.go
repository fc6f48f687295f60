package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
)

// errSentence is an error already phrased for a person; explain passes it through unchanged.
type errSentence struct{ msg string }

func (e errSentence) Error() string { return e.msg }

func sentencef(format string, args ...any) error { return errSentence{fmt.Sprintf(format, args...)} }

// subject is what a command was about, so an error can name it: the mysis a command names, or the new name of
// `create`; service and addr say whom the command talked to.
type subject struct {
	mysis   string
	create  bool
	service string
	addr    string
	known   []string // every mysis name, for "did you mean"; nil when unknown
}

// explain turns a gRPC error into a sentence: no "rpc error: code = …", no SQL constraint names.
func explain(err error, s subject) error {
	if err == nil {
		return nil
	}
	var done errSentence
	if errors.As(err, &done) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return sentencef("interrupted")
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	msg := st.Message()
	switch st.Code() {
	case codes.NotFound:
		if s.mysis != "" {
			if guess := closest(s.mysis, s.known); guess != "" {
				return sentencef("no mysis named %s (did you mean %s?)", s.mysis, guess)
			}
			return sentencef("no mysis named %s (zoea list shows them all)", s.mysis)
		}
		return sentencef("not found: %s", msg)
	case codes.AlreadyExists:
		if s.create && s.mysis != "" {
			return sentencef("a mysis named %s already exists", s.mysis)
		}
		return sentencef("already exists: %s", trimSQL(msg))
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
			return sentencef("%s: %s", flagName(field), msg)
		}
		return sentencef("%s", msg)
	case codes.FailedPrecondition:
		return sentencef("%s", msg)
	case codes.Unavailable:
		return sentencef("cannot reach the %s at %s: is the swarm running? (make dev, or docker compose up; --%s or ZOEA_%s_ADDR point elsewhere)",
			s.service, s.addr, s.service, strings.ToUpper(s.service))
	case codes.DeadlineExceeded:
		return sentencef("the %s at %s did not answer in time (--timeout)", s.service, s.addr)
	case codes.Unauthenticated, codes.PermissionDenied:
		return sentencef("the %s refused the call: %s (set ZOEA_ADMIN_TOKEN or --token to the swarm's admin token)", s.service, msg)
	}
	return sentencef("%s: %s", s.service, trimSQL(msg))
}

// flagName shows an API field as the CLI flag that sets it.
func flagName(field string) string {
	switch field {
	case "provider", "model", "temperature", "limit", "state":
		return "--" + field
	case "system_prompt":
		return "--system-prompt"
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

// closest is the known name nearest to name, when it is near enough to be a typo.
func closest(name string, known []string) string {
	best, bestD := "", 1<<30
	for _, k := range known {
		if d := editDistance(strings.ToLower(name), strings.ToLower(k)); d < bestD {
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

// editDistance is the Damerau–Levenshtein (optimal string alignment) distance: a swapped pair counts once, so
// "scuot" is one edit from "scout".
func editDistance(a, b string) int {
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

// mysisNames lists every mysis name for suggestions; nil when the runner cannot say.
func mysisNames(ctx context.Context, c *clients) []string {
	var names []string
	req := &runnerv1.ListMysesRequest{PageSize: 1000}
	for {
		resp, err := c.swarm.ListMyses(ctx, req)
		if err != nil {
			return names
		}
		for _, s := range resp.GetMyses() {
			names = append(names, s.GetMysis().GetName())
		}
		if req.PageToken = resp.GetNextPageToken(); req.PageToken == "" {
			return names
		}
	}
}
