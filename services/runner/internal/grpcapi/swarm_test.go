package grpcapi

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/services/runner/internal/admin"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

type noLive struct{}

func (noLive) Status(string) (mysis.Status, bool) { return mysis.Status{}, false }
func (noLive) Owner(string) string                { return "" }
func (noLive) Silent(string) (time.Time, bool)    { return time.Time{}, false }

// Bad input is rejected before any call to the memory service (the nil client would panic), as InvalidArgument
// naming the field.
func TestInvalidArgumentsNameTheField(t *testing.T) {
	s := New(nil, nil, nil, noLive{}, Defaults{Rules: admin.Rules{Provider: "autopilot", Providers: []string{"autopilot", "ollama"}, Models: map[string]string{"ollama": "qwen3:8b"}}})
	temp := func(v float64) *float64 { return &v }
	str := func(v string) *string { return &v }
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		call  func() error
		field string
	}{
		{"empty name", func() error { _, err := s.CreateMysis(ctx, &runnerv1.CreateMysisRequest{}); return err }, "name"},
		{"long name", func() error {
			_, err := s.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: strings.Repeat("x", 65)})
			return err
		}, "name"},
		{"uuid name", func() error {
			_, err := s.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: "0b8c7d2e-1f3a-4b5c-9d6e-7f8091a2b3c4"})
			return err
		}, "name"},
		{"unknown provider", func() error {
			_, err := s.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: "a", Provider: "gpt9"})
			return err
		}, "provider"},
		{"temperature", func() error {
			_, err := s.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: "a", Temperature: temp(2.5)})
			return err
		}, "temperature"},
		{"page size", func() error { _, err := s.ListMyses(ctx, &runnerv1.ListMysesRequest{PageSize: 5000}); return err }, "page_size"},
		{"missing mysis", func() error { _, err := s.GetMysis(ctx, &runnerv1.GetMysisRequest{}); return err }, "mysis"},
		{"start without mysis", func() error { _, err := s.StartMysis(ctx, &runnerv1.StartMysisRequest{Mysis: " "}); return err }, "mysis"},
		// One name rule everywhere (libs/names): refused, never trimmed; no invisible characters; no UUIDs.
		{"spaced name", func() error {
			_, err := s.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: "  spaced  "})
			return err
		}, "name"},
		{"zero-width name", func() error { _, err := s.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: "\u200b"}); return err }, "name"},
		{"bidi name", func() error {
			_, err := s.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: "evil\u202Etxt"})
			return err
		}, "name"},
		{"NUL in mysis", func() error { _, err := s.StartMysis(ctx, &runnerv1.StartMysisRequest{Mysis: "a\x00b"}); return err }, "mysis"},
		{"configure without mysis", func() error {
			_, err := s.ConfigureMysis(ctx, &runnerv1.ConfigureMysisRequest{Model: str("x")})
			return err
		}, "mysis"},
	} {
		err := server.ToStatus(ctx, slog.New(slog.DiscardHandler), tc.call())
		st, _ := status.FromError(err)
		if st.Code() != codes.InvalidArgument {
			t.Errorf("%s: code %v (%v), want InvalidArgument", tc.name, st.Code(), err)
			continue
		}
		var field string
		for _, d := range st.Details() {
			if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 {
				field = br.GetFieldViolations()[0].GetField()
			}
		}
		if field != tc.field {
			t.Errorf("%s: field %q, want %q (%v)", tc.name, field, tc.field, err)
		}
	}
}
