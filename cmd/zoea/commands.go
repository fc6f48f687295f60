package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
)

// call runs fn with dialled clients and the per-call timeout.
func (ep *endpoints) call(cmd *cobra.Command, fn func(ctx context.Context, c *clients) error) error {
	c, err := ep.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), ep.timeout)
	defer cancel()
	return fn(ctx, c)
}

func printJSON(w io.Writer, m proto.Message) error {
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

func stateName(s memoryv1.MysisState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "MYSIS_STATE_"))
}

func printStatuses(w io.Writer, list []*runnerv1.MysisStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tPROVIDER\tMODEL\tCREDITS\tTURNS\tTOKENS\tCOST\tLAST ACTION\tOWNER")
	for _, s := range list {
		m := s.GetMysis()
		credits := "?"
		if s.GetCredits() >= 0 {
			credits = fmt.Sprint(s.GetCredits())
		}
		u := s.GetUsage()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", m.GetName(), stateName(m.GetState()), m.GetProvider(),
			m.GetModel(), credits, s.GetTurns(), u.GetPromptTokens()+u.GetCompletionTokens(), formatUSD(u.GetCostNanos()),
			s.GetLastAction(), s.GetOwner())
	}
	tw.Flush()
}

func listCmd(ep *endpoints) *cobra.Command {
	var asJSON bool
	var state string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List myses with their live status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return ep.call(cmd, func(ctx context.Context, c *clients) error {
				req := &runnerv1.ListMysesRequest{PageSize: 1000}
				if state != "" {
					v, ok := memoryv1.MysisState_value["MYSIS_STATE_"+strings.ToUpper(state)]
					if !ok {
						return fmt.Errorf("--state: unknown state %q (idle, running, stopped, errored)", state)
					}
					req.State = memoryv1.MysisState(v)
				}
				var all []*runnerv1.MysisStatus
				for {
					resp, err := c.swarm.ListMyses(ctx, req)
					if err != nil {
						return err
					}
					all = append(all, resp.GetMyses()...)
					if resp.GetNextPageToken() == "" {
						break
					}
					req.PageToken = resp.GetNextPageToken()
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), &runnerv1.ListMysesResponse{Myses: all})
				}
				printStatuses(cmd.OutOrStdout(), all)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&state, "state", "", "only myses in this state")
	return cmd
}

func getCmd(ep *endpoints) *cobra.Command {
	return &cobra.Command{
		Use:   "get MYSIS",
		Short: "Show one mysis (id or name) as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ep.call(cmd, func(ctx context.Context, c *clients) error {
				resp, err := c.swarm.GetMysis(ctx, &runnerv1.GetMysisRequest{Mysis: args[0]})
				if err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), resp.GetStatus())
			})
		},
	}
}

func createCmd(ep *endpoints) *cobra.Command {
	req := &runnerv1.CreateMysisRequest{}
	var temperature float64
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a mysis",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Name = args[0]
			if cmd.Flags().Changed("temperature") {
				req.Temperature = &temperature
			}
			return ep.call(cmd, func(ctx context.Context, c *clients) error {
				resp, err := c.swarm.CreateMysis(ctx, req)
				if err != nil {
					return err
				}
				printStatuses(cmd.OutOrStdout(), []*runnerv1.MysisStatus{resp.GetStatus()})
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&req.Provider, "provider", "", "ollama, openai or autopilot (default: the runner's)")
	cmd.Flags().StringVar(&req.Model, "model", "", "model name (default: the provider's)")
	cmd.Flags().Float64Var(&temperature, "temperature", 0.7, "sampling temperature")
	cmd.Flags().StringVar(&req.SystemPrompt, "system-prompt", "", "system prompt (default: Zoea's SpaceMolt prompt)")
	cmd.Flags().BoolVar(&req.Start, "start", false, "start it right away")
	return cmd
}

func startCmd(ep *endpoints) *cobra.Command {
	return &cobra.Command{
		Use: "start MYSIS", Short: "Start a mysis", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ep.call(cmd, func(ctx context.Context, c *clients) error {
				resp, err := c.swarm.StartMysis(ctx, &runnerv1.StartMysisRequest{Mysis: args[0]})
				if err != nil {
					return err
				}
				printStatuses(cmd.OutOrStdout(), []*runnerv1.MysisStatus{resp.GetStatus()})
				return nil
			})
		},
	}
}

func stopCmd(ep *endpoints) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use: "stop MYSIS", Short: "Stop a mysis", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ep.call(cmd, func(ctx context.Context, c *clients) error {
				resp, err := c.swarm.StopMysis(ctx, &runnerv1.StopMysisRequest{Mysis: args[0], Reason: reason})
				if err != nil {
					return err
				}
				printStatuses(cmd.OutOrStdout(), []*runnerv1.MysisStatus{resp.GetStatus()})
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "stopped by the commander", "why")
	return cmd
}

func deleteCmd(ep *endpoints) *cobra.Command {
	return &cobra.Command{
		Use: "delete MYSIS", Short: "Delete a mysis with all its memories", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ep.call(cmd, func(ctx context.Context, c *clients) error {
				if _, err := c.swarm.DeleteMysis(ctx, &runnerv1.DeleteMysisRequest{Mysis: args[0]}); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "deleted", args[0])
				return nil
			})
		},
	}
}

func configureCmd(ep *endpoints) *cobra.Command {
	var provider, model, prompt string
	var temperature float64
	cmd := &cobra.Command{
		Use: "configure MYSIS", Short: "Change a mysis's provider, model, temperature or system prompt", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &runnerv1.ConfigureMysisRequest{Mysis: args[0]}
			fl := cmd.Flags()
			if fl.Changed("provider") {
				req.Provider = &provider
			}
			if fl.Changed("model") {
				req.Model = &model
			}
			if fl.Changed("temperature") {
				req.Temperature = &temperature
			}
			if fl.Changed("system-prompt") {
				req.SystemPrompt = &prompt
			}
			return ep.call(cmd, func(ctx context.Context, c *clients) error {
				resp, err := c.swarm.ConfigureMysis(ctx, req)
				if err != nil {
					return err
				}
				printStatuses(cmd.OutOrStdout(), []*runnerv1.MysisStatus{resp.GetStatus()})
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "ollama, openai or autopilot")
	cmd.Flags().StringVar(&model, "model", "", "model name")
	cmd.Flags().Float64Var(&temperature, "temperature", 0.7, "sampling temperature")
	cmd.Flags().StringVar(&prompt, "system-prompt", "", "system prompt")
	return cmd
}

func broadcastCmd(ep *endpoints) *cobra.Command {
	return &cobra.Command{
		Use: "broadcast TEXT", Short: "Broadcast a mission to every mysis", Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ep.call(cmd, func(ctx context.Context, c *clients) error {
				resp, err := c.bus.Broadcast(ctx, &busv1.BroadcastRequest{Content: strings.Join(args, " ")})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "broadcast %s accepted for %d myses\n", resp.GetBroadcastId(), resp.GetTargetCount())
				return nil
			})
		},
	}
}

func sendCmd(ep *endpoints) *cobra.Command {
	return &cobra.Command{
		Use: "send MYSIS TEXT", Short: "Send a direct message to one mysis (wakes it when idle)", Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ep.call(cmd, func(ctx context.Context, c *clients) error {
				resp, err := c.bus.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: args[0], Content: strings.Join(args[1:], " ")})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "sent: memory #%d (seq %d, turn %d)\n", resp.GetMemory().GetId(), resp.GetMemory().GetSeq(), resp.GetMemory().GetTurn())
				return nil
			})
		},
	}
}

// resolve turns a mysis id or name into its id through the memory service.
func resolve(ctx context.Context, c *clients, ref string) (*memoryv1.Mysis, error) {
	resp, err := c.memory.GetMysisByName(ctx, &memoryv1.GetMysisByNameRequest{Name: ref})
	if err == nil {
		return resp.GetMysis(), nil
	}
	byID, idErr := c.memory.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: ref})
	if idErr != nil {
		return nil, fmt.Errorf("no mysis named or with id %q", ref)
	}
	return byID.GetMysis(), nil
}

func searchCmd(ep *endpoints) *cobra.Command {
	var limit int32
	var reasoning, broadcasts, nudges bool
	cmd := &cobra.Command{
		Use:   "search [MYSIS] QUERY",
		Short: "Ranked full-text search of a mysis's messages (or --reasoning), or of all broadcasts (--broadcasts)",
		Long:  "QUERY uses web search syntax: words, \"exact phrases\", OR, -exclusion. Identifiers like iron_ore work.",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ep.call(cmd, func(ctx context.Context, c *clients) error {
				w := cmd.OutOrStdout()
				if broadcasts {
					resp, err := c.memory.SearchBroadcasts(ctx, &memoryv1.SearchBroadcastsRequest{Query: strings.Join(args, " "), Limit: limit})
					if err != nil {
						return err
					}
					for _, h := range resp.GetHits() {
						fmt.Fprintf(w, "%s  %.3f  %s\n", h.GetBroadcast().GetCreatedAt().AsTime().Format(time.DateTime), h.GetRank(), h.GetSnippet())
					}
					return nil
				}
				if len(args) != 2 {
					return fmt.Errorf("usage: zoea search MYSIS QUERY (or --broadcasts QUERY)")
				}
				m, err := resolve(ctx, c, args[0])
				if err != nil {
					return err
				}
				var hits []*memoryv1.MemoryHit
				if reasoning {
					resp, err := c.memory.SearchReasoning(ctx, &memoryv1.SearchReasoningRequest{MysisId: m.GetId(), Query: args[1], Limit: limit})
					if err != nil {
						return err
					}
					hits = resp.GetHits()
				} else {
					resp, err := c.memory.SearchMessages(ctx, &memoryv1.SearchMessagesRequest{MysisId: m.GetId(), Query: args[1], Limit: limit, IncludeNudges: nudges})
					if err != nil {
						return err
					}
					hits = resp.GetHits()
				}
				for _, h := range hits {
					mem := h.GetMemory()
					fmt.Fprintf(w, "#%d seq %d turn %d %s/%s  %.3f  %s\n", mem.GetId(), mem.GetSeq(), mem.GetTurn(),
						strings.ToLower(strings.TrimPrefix(mem.GetRole().String(), "ROLE_")), mem.GetToolName(), h.GetRank(), h.GetSnippet())
				}
				return nil
			})
		},
	}
	cmd.Flags().Int32Var(&limit, "limit", 20, "max hits (≤ 100)")
	cmd.Flags().BoolVar(&reasoning, "reasoning", false, "search reasoning instead of messages")
	cmd.Flags().BoolVar(&broadcasts, "broadcasts", false, "search every broadcast")
	cmd.Flags().BoolVar(&nudges, "include-nudges", false, "include nudges")
	return cmd
}

func previewCmd(ep *endpoints) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use: "preview MYSIS", Short: "Show what the composer would send to the LLM now", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ep.call(cmd, func(ctx context.Context, c *clients) error {
				resp, err := c.swarm.PreviewContext(ctx, &runnerv1.PreviewContextRequest{Mysis: args[0]})
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), resp)
				}
				w := cmd.OutOrStdout()
				for i, m := range resp.GetMessages() {
					role := strings.ToLower(strings.TrimPrefix(m.GetRole().String(), "ROLE_"))
					fmt.Fprintf(w, "[%d] %s%s\n", i, role, suffix(m.GetName(), m.GetToolCallId()))
					if m.GetContent() != "" {
						fmt.Fprintln(w, indent(clip(m.GetContent(), 600)))
					}
					for _, tc := range m.GetToolCalls() {
						fmt.Fprintf(w, "    → %s(%s) id=%s\n", tc.GetName(), tc.GetArgumentsJson(), tc.GetId())
					}
				}
				t := resp.GetManifest().GetTokens()
				fmt.Fprintf(w, "tokens: system %d, mission %d, history %d, current turn %d, synthetic %d = %d of %d\n",
					t.GetSystem(), t.GetMission(), t.GetHistory(), t.GetCurrentTurn(), t.GetSynthetic(), t.GetTotal(), resp.GetManifest().GetTokenBudget())
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the full response (messages, manifest, encouragement) as JSON")
	return cmd
}

func suffix(name, id string) string {
	if name == "" && id == "" {
		return ""
	}
	return fmt.Sprintf(" (%s %s)", name, id)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… (%d more bytes)", len(s)-n)
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

func historyCmd(ep *endpoints) *cobra.Command {
	var limit int32
	cmd := &cobra.Command{
		Use: "history MYSIS", Short: "Show a mysis's most recent memories", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ep.call(cmd, func(ctx context.Context, c *clients) error {
				m, err := resolve(ctx, c, args[0])
				if err != nil {
					return err
				}
				resp, err := c.memory.ListRecentMemories(ctx, &memoryv1.ListRecentMemoriesRequest{MysisId: m.GetId(), Limit: limit})
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				for _, mem := range resp.GetMemories() {
					src := strings.ToLower(strings.TrimPrefix(mem.GetSource().String(), "SOURCE_"))
					role := strings.ToLower(strings.TrimPrefix(mem.GetRole().String(), "ROLE_"))
					fmt.Fprintf(w, "seq %d turn %d %s/%s %s\n", mem.GetSeq(), mem.GetTurn(), role, src, mem.GetToolName())
					if mem.GetContent() != "" {
						fmt.Fprintln(w, indent(clip(mem.GetContent(), 300)))
					}
					for _, tc := range mem.GetToolCalls() {
						fmt.Fprintf(w, "    → %s(%s)\n", tc.GetName(), tc.GetArgumentsJson())
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().Int32Var(&limit, "limit", 20, "how many")
	return cmd
}

func watchCmd(ep *endpoints) *cobra.Command {
	var myses []string
	cmd := &cobra.Command{
		Use: "watch", Short: "Stream swarm events until Ctrl-C", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := ep.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			stream, err := c.bus.WatchEvents(cmd.Context(), &busv1.WatchEventsRequest{MysisIds: myses})
			if err != nil {
				return err
			}
			for {
				resp, err := stream.Recv()
				if err != nil {
					if cmd.Context().Err() != nil {
						return nil
					}
					return err
				}
				e := resp.GetEvent()
				b, _ := protojson.Marshal(e)
				fmt.Fprintln(os.Stdout, string(b))
			}
		},
	}
	cmd.Flags().StringSliceVar(&myses, "mysis", nil, "only these mysis ids")
	return cmd
}
