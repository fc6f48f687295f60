package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/present"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/spend"
)

// usageRange turns --since/--today/--from/--to into a time range; both zero means all time.
func usageRange(now time.Time, since time.Duration, today bool, from, to string) (time.Time, time.Time, error) {
	var f, t time.Time
	n := 0
	if since > 0 {
		f, n = now.Add(-since), n+1
	}
	if today {
		u := now.UTC()
		f, n = time.Date(u.Year(), u.Month(), u.Day(), 0, 0, 0, 0, time.UTC), n+1
	}
	if from != "" {
		v, err := time.Parse(time.RFC3339, from)
		if err != nil {
			return f, t, fmt.Errorf("--from: %q is not a time like 2026-11-23T00:00:00Z", from)
		}
		f, n = v, n+1
	}
	if n > 1 {
		return f, t, fmt.Errorf("use one of --since, --today and --from")
	}
	if to != "" {
		v, err := time.Parse(time.RFC3339, to)
		if err != nil {
			return f, t, fmt.Errorf("--to: %q is not a time like 2026-11-23T12:00:00Z", to)
		}
		t = v
	}
	if !f.IsZero() && !t.IsZero() && !t.After(f) {
		return f, t, fmt.Errorf("--to must be after the start of the range")
	}
	return f, t, nil
}

func usageCmd(ep *endpoints) *cobra.Command {
	var (
		asJSON       bool
		by, from, to string
		since        time.Duration
		today        bool
		pageSize     int
		top          int
	)
	cmd := &cobra.Command{
		Use:   "usage [MYSIS...]",
		Short: "Show LLM usage and cost of the swarm or some myses (all time, --since 1h, --today, or --from/--to)",
		RunE: func(cmd *cobra.Command, args []string) error {
			f, t, err := usageRange(time.Now(), since, today, from, to)
			if err != nil {
				return err
			}
			if pageSize < 1 || pageSize > 1000 {
				return fmt.Errorf("--page-size: %d is not between 1 and 1000", pageSize)
			}
			req := &runnerv1.GetUsageRequest{Myses: args, PageSize: int32(pageSize)}
			if top != 0 || cmd.Flags().Changed("top") {
				if top < 1 || top > 100 {
					return fmt.Errorf("--top: %d is not between 1 and 100", top)
				}
				if by != "mysis" {
					return fmt.Errorf("--top ranks myses by cost: use it with --by mysis")
				}
				req.Top, req.PageSize = int32(top), 0
			}
			switch by {
			case "mysis":
				req.GroupBy = memoryv1.UsageGroup_USAGE_GROUP_MYSIS
			case "model":
				req.GroupBy = memoryv1.UsageGroup_USAGE_GROUP_MODEL
			case "none":
			default:
				return fmt.Errorf("--by: %q is not mysis, model or none", by)
			}
			if !f.IsZero() {
				req.From = timestamppb.New(f)
			}
			if !t.IsZero() {
				req.To = timestamppb.New(t)
			}
			return ep.call(cmd, present.Subject{}, func(ctx context.Context, c *clients) error {
				all := &runnerv1.GetUsageResponse{}
				for {
					resp, err := c.swarm.GetUsage(ctx, req)
					if err != nil {
						return err
					}
					all.Total = resp.GetTotal()
					all.Rows = append(all.Rows, resp.GetRows()...)
					if resp.GetNextPageToken() == "" {
						break
					}
					req.PageToken = resp.GetNextPageToken()
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), all)
				}
				printUsage(cmd.OutOrStdout(), by, all, top > 0)
				return nil
			})
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	fl.StringVar(&by, "by", "mysis", "group rows by mysis, model or none")
	fl.DurationVar(&since, "since", 0, "only calls of the last duration, e.g. 1h")
	fl.BoolVar(&today, "today", false, "only calls since 00:00 UTC")
	fl.StringVar(&from, "from", "", "only calls from this time (RFC 3339)")
	fl.StringVar(&to, "to", "", "only calls before this time (RFC 3339)")
	fl.IntVar(&pageSize, "page-size", 200, "rows per request (1-1000; 200 keeps each request fast at 10,000 myses)")
	fl.IntVar(&top, "top", 0, "only the N myses that cost most (1-100), highest first, and the others as one line")
	return cmd
}

func printUsage(w io.Writer, by string, u *runnerv1.GetUsageResponse, top bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	first := "MYSIS"
	if by == "model" {
		first = "MODEL"
	}
	fmt.Fprintf(tw, "%s\tCALLS\tFAILED\tPROMPT\tCACHED\tCOMPLETION\tREASONING\tCOMPOSED\tCOST\tAVG LATENCY\t\n", first)
	line := func(name string, t *memoryv1.UsageTotals) {
		avg := "-"
		if t.GetCalls() > 0 {
			avg = (time.Duration(math.Round(float64(t.GetLatencyMs())/float64(t.GetCalls()))) * time.Millisecond).String()
			if avg == "0s" {
				avg = "<1ms" // an offline provider (autopilot) answers within the millisecond
			}
		}
		n := present.Grouped
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, n(t.GetCalls()), n(t.GetFailedCalls()), n(t.GetPromptTokens()),
			n(t.GetCachedPromptTokens()), n(t.GetCompletionTokens()), n(t.GetReasoningTokens()), n(t.GetComposedTokens()), spend.USD(t.GetCostNanos()), avg)
	}
	for _, r := range u.GetRows() {
		name := r.GetMysisName()
		if by == "model" {
			name = r.GetProvider() + "/" + r.GetModel()
		}
		line(name, r.GetTotals())
	}
	if top {
		if others := othersOf(u); others.GetCalls() > 0 {
			line("OTHERS", others)
		}
	}
	line("TOTAL", u.GetTotal())
	tw.Flush()
}

// othersOf is the total minus the rows: what the myses not shown spent (first and last call unknown).
func othersOf(u *runnerv1.GetUsageResponse) *memoryv1.UsageTotals {
	t := u.GetTotal()
	o := &memoryv1.UsageTotals{Calls: t.GetCalls(), FailedCalls: t.GetFailedCalls(), PromptTokens: t.GetPromptTokens(),
		CachedPromptTokens: t.GetCachedPromptTokens(), CompletionTokens: t.GetCompletionTokens(), ReasoningTokens: t.GetReasoningTokens(),
		ComposedTokens: t.GetComposedTokens(), LatencyMs: t.GetLatencyMs(), Retries: t.GetRetries(), CostNanos: t.GetCostNanos()}
	for _, r := range u.GetRows() {
		x := r.GetTotals()
		o.Calls -= x.GetCalls()
		o.FailedCalls -= x.GetFailedCalls()
		o.PromptTokens -= x.GetPromptTokens()
		o.CachedPromptTokens -= x.GetCachedPromptTokens()
		o.CompletionTokens -= x.GetCompletionTokens()
		o.ReasoningTokens -= x.GetReasoningTokens()
		o.ComposedTokens -= x.GetComposedTokens()
		o.LatencyMs -= x.GetLatencyMs()
		o.Retries -= x.GetRetries()
		o.CostNanos -= x.GetCostNanos()
	}
	return o
}

func limitsCmd(ep *endpoints) *cobra.Command {
	var clear bool
	cmd := &cobra.Command{
		Use:   "limits MYSIS [unit/window=amount,...]",
		Short: "Show or set a mysis's spend limits, e.g. `zoea limits miner-1 cost/day=2.00,tokens/hour=200000`",
		Args:  argsBetween(1, 2, "a mysis and, to set them, the limits"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ep.call(cmd, present.Subject{Mysis: args[0]}, func(ctx context.Context, c *clients) error {
				var st *runnerv1.MysisStatus
				switch {
				case len(args) == 2 || clear:
					var ls []*memoryv1.SpendLimit
					if len(args) == 2 {
						var err error
						if ls, err = spend.Parse(args[1]); err != nil {
							return err
						}
					}
					resp, err := c.swarm.SetSpendLimits(ctx, &runnerv1.SetSpendLimitsRequest{Mysis: args[0], Limits: ls})
					if err != nil {
						return err
					}
					st = resp.GetStatus()
				default:
					resp, err := c.swarm.GetMysis(ctx, &runnerv1.GetMysisRequest{Mysis: args[0]})
					if err != nil {
						return err
					}
					st = resp.GetStatus()
				}
				w := cmd.OutOrStdout()
				if len(st.GetSpendLimits()) == 0 {
					fmt.Fprintf(w, "%s has no spend limit\n", st.GetMysis().GetName())
				}
				for _, l := range st.GetSpendLimits() {
					fmt.Fprintf(w, "%s: %s\n", st.GetMysis().GetName(), spend.Describe(l))
				}
				fmt.Fprintf(w, "spent so far: %s tokens, %s\n", present.Grouped(st.GetUsage().GetPromptTokens()+st.GetUsage().GetCompletionTokens()), spend.USD(st.GetUsage().GetCostNanos()))
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&clear, "clear", false, "remove the mysis's own limits (the configured defaults apply again)")
	return cmd
}
