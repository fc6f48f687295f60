package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/present"
	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/memoryrules"
	"github.com/zoeaswarm/zoea/libs/text"
)

// call runs fn with dialled clients and the per-call timeout, and turns its error into a sentence about s (the
// runner is the service named unless s says otherwise).
func (ep *endpoints) call(cmd *cobra.Command, s present.Subject, fn func(ctx context.Context, c *clients) error) error {
	c, err := ep.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), ep.timeout)
	defer cancel()
	err = fn(ctx, c)
	if s.Service == "" {
		s.Service = "runner"
	}
	if s.Addr == "" {
		s.Addr = map[string]string{"runner": ep.runner, "bus": ep.bus, "memory": ep.memory}[s.Service]
	}
	if status.Code(err) == codes.NotFound && s.Mysis != "" {
		lctx, lcancel := context.WithTimeout(cmd.Context(), 5*time.Second)
		s.Known = mysisNames(lctx, c)
		lcancel()
	}
	return present.Explain(err, s)
}

func printJSON(w io.Writer, m proto.Message) error {
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

func stateName(s memoryv1.MysisState) string { return present.State(s) }

// printStatuses prints the list table. TURNS is the mysis's stored turn number, its whole life's turns (a runner's
// own count restarts with each lease; `zoea get` shows both). The error column is short (the full error is in
// `zoea get`); an errored mysis without a recorded error shows its state reason.
func printStatuses(w io.Writer, list []*runnerv1.MysisStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tPROVIDER\tMODEL\tCREDITS\tTURNS\tTOKENS\tCOST\tLAST ACTION\tLAST ERROR\tOWNER")
	for _, s := range list {
		m := s.GetMysis()
		tokens, cost := present.Usage(s)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", m.GetName(), stateName(m.GetState()), m.GetProvider(),
			m.GetModel(), present.Credits(s), m.GetCurrentTurn(), tokens, cost, present.Clip(present.OneLine(s.GetLastAction()), 30),
			present.Clip(present.OneLine(lastError(s)), 50), s.GetOwner())
	}
	tw.Flush()
	for _, s := range list {
		if note := pausedNote(s, time.Now()); note != "" {
			fmt.Fprintf(w, "%s: %s\n", s.GetMysis().GetName(), note)
		}
	}
}

// pausedNote explains a mysis whose lease holder stopped renewing it (a runner that died): nobody plays it until the
// lease expires and another runner takes it over, and what the table shows for it is that runner's last report.
func pausedNote(s *runnerv1.MysisStatus, now time.Time) string {
	p := s.GetPausedUntil()
	if p == nil {
		return ""
	}
	until := p.AsTime()
	wait := max(until.Sub(now).Round(time.Second), 0)
	return fmt.Sprintf("play is paused until its lease expires (by %s, in %s): runner %s, which held it, stopped renewing "+
		"it and has probably died; its credits and last action are as that runner last reported them and may be stale",
		until.Local().Format(time.TimeOnly), wait, s.GetOwner())
}

// lastError is the mysis's last error, or the reason it is errored when the runner recorded none.
func lastError(s *runnerv1.MysisStatus) string { return present.LastError(s) }

func listCmd(ep *endpoints) *cobra.Command {
	var asJSON bool
	var state string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List myses with their live status",
		Args:  noArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return ep.call(cmd, present.Subject{}, func(ctx context.Context, c *clients) error {
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
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "get MYSIS",
		Short: "Show one mysis (name or id): configuration, live status and its full last error",
		Args:  oneMysis(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ep.call(cmd, present.Subject{Mysis: args[0]}, func(ctx context.Context, c *clients) error {
				resp, err := c.swarm.GetMysis(ctx, &runnerv1.GetMysisRequest{Mysis: args[0]})
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), resp.GetStatus())
				}
				printStatus(cmd.OutOrStdout(), resp.GetStatus())
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (with the whole system prompt)")
	return cmd
}

// printStatus shows one mysis as "key: value" lines; the system prompt is summarised, not dumped.
func printStatus(w io.Writer, s *runnerv1.MysisStatus) {
	m := s.GetMysis()
	tokens, cost := present.Usage(s)
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("name", m.GetName())
	row("id", m.GetId())
	state := stateName(m.GetState())
	if r := m.GetStateReason(); r != "" {
		state += " (" + r + ")"
	}
	row("state", state)
	row("provider", fmt.Sprintf("%s, model %s, temperature %g", m.GetProvider(), m.GetModel(), m.GetTemperature()))
	row("turn", fmt.Sprintf("%d (%d run by its current owner)", m.GetCurrentTurn(), s.GetTurns()))
	row("credits", present.Credits(s))
	if sh := s.GetShip(); sh != nil {
		row("where", present.Where(s))
		row("ship", fmt.Sprintf("%s, hull %d/%d, shield %d/%d, fuel %d/%d", present.Safe(sh.GetClass()), sh.GetHull(), sh.GetMaxHull(),
			sh.GetShield(), sh.GetMaxShield(), sh.GetFuel(), sh.GetMaxFuel()))
		var items []string
		for _, c := range sh.GetCargo() {
			items = append(items, fmt.Sprintf("%s × %d", present.Safe(c.GetItemId()), c.GetQuantity()))
		}
		if len(items) == 0 {
			items = []string{"empty"}
		}
		row("cargo", present.Cargo(s)+": "+strings.Join(items, ", "))
		earned := "?"
		if sh.GetCreditsEarned() >= 0 {
			earned = present.Grouped(sh.GetCreditsEarned()) + " credits"
		}
		row("earned", earned+", "+present.EarnedPerDollar(s))
	}
	row("tokens", tokens)
	row("cost", cost)
	action := s.GetLastAction()
	if at := s.GetLastActionAt(); at != nil && action != "" {
		action += " at " + at.AsTime().Local().Format(time.DateTime)
	}
	row("last action", action)
	row("owner", s.GetOwner())
	if note := pausedNote(s, time.Now()); note != "" {
		row("paused", note)
	}
	row("account", m.GetAccountUsername())
	row("endpoint", endpointName(m.GetSpacemoltEndpoint()))
	prompt := m.GetSystemPrompt()
	first, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
	row("system prompt", fmt.Sprintf("%q… (%d characters; --json shows it all)", present.Clip(first, 60), len([]rune(prompt))))
	tw.Flush()
	if e := lastError(s); e != "" {
		fmt.Fprintf(w, "last error:\n%s\n", indent(e))
	}
}

func createCmd(ep *endpoints) *cobra.Command {
	req := &runnerv1.CreateMysisRequest{}
	var temperature float64
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a mysis",
		Args:  argsBetween(1, 1, "the new mysis's name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Name = args[0]
			if cmd.Flags().Changed("temperature") {
				req.Temperature = &temperature
			}
			req.SpacemoltEndpoint = endpointValue(req.SpacemoltEndpoint)
			return ep.call(cmd, present.Subject{Mysis: req.Name, Create: true}, func(ctx context.Context, c *clients) error {
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
	cmd.Flags().StringVar(&req.SpacemoltEndpoint, "endpoint", "", "SpaceMolt MCP endpoint it plays: v1 (/mcp) or v2 (/mcp/v2) (default: the swarm's, ZOEA_SPACEMOLT_ENDPOINT)")
	return cmd
}

// endpointValue maps the --endpoint flag to the API's value: "swarm" (or nothing) is "", the swarm's endpoint.
func endpointValue(flag string) string {
	if strings.EqualFold(strings.TrimSpace(flag), "swarm") {
		return ""
	}
	return flag
}

// endpointName shows a mysis's SpaceMolt endpoint.
func endpointName(e string) string {
	switch e {
	case "":
		return "the swarm's (ZOEA_SPACEMOLT_ENDPOINT)"
	case "v1":
		return "v1 (/mcp)"
	case "v2":
		return "v2 (/mcp/v2)"
	}
	return e
}

func startCmd(ep *endpoints) *cobra.Command {
	return &cobra.Command{
		Use: "start MYSIS", Short: "Start a mysis", Args: oneMysis(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ep.call(cmd, present.Subject{Mysis: args[0]}, func(ctx context.Context, c *clients) error {
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
		Use: "stop MYSIS", Short: "Stop a mysis", Args: oneMysis(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ep.call(cmd, present.Subject{Mysis: args[0]}, func(ctx context.Context, c *clients) error {
				resp, err := c.swarm.StopMysis(ctx, &runnerv1.StopMysisRequest{Mysis: args[0], Reason: reason})
				if err != nil {
					return err
				}
				printStatuses(cmd.OutOrStdout(), []*runnerv1.MysisStatus{resp.GetStatus()})
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", memoryrules.CommanderStopReason, "why")
	return cmd
}

func deleteCmd(ep *endpoints) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use: "delete MYSIS", Short: "Delete a mysis with all its memories (asks first; --yes skips the question)", Args: oneMysis(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ep.call(cmd, present.Subject{Mysis: args[0]}, func(ctx context.Context, c *clients) error {
				got, err := c.swarm.GetMysis(ctx, &runnerv1.GetMysisRequest{Mysis: args[0]})
				if err != nil {
					return err
				}
				m := got.GetStatus().GetMysis()
				if !yes {
					ok, err := confirm(cmd.InOrStdin(), cmd.OutOrStdout(), fmt.Sprintf(
						"Delete mysis %s (%s, turn %d) with all its %d memories? This cannot be undone. [y/N] ",
						m.GetName(), stateName(m.GetState()), m.GetCurrentTurn(), m.GetLastSeq()))
					if err != nil {
						return err
					}
					if !ok {
						return present.Sentencef("not deleted: %s is kept", m.GetName())
					}
				}
				if _, err := c.swarm.DeleteMysis(ctx, &runnerv1.DeleteMysisRequest{Mysis: m.GetId()}); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "deleted", m.GetName())
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "delete without asking")
	return cmd
}

// confirm asks a yes/no question on in; only "y" or "yes" is yes. With nothing to read (a script without --yes)
// the answer is no, said plainly.
func confirm(in io.Reader, out io.Writer, question string) (bool, error) {
	fmt.Fprint(out, question)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(out)
		return false, present.Sentencef("no answer on stdin: nothing deleted (pass --yes to delete without asking)")
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

func configureCmd(ep *endpoints) *cobra.Command {
	var provider, model, prompt, endpoint string
	var temperature float64
	cmd := &cobra.Command{
		Use: "configure MYSIS", Short: "Change a mysis's provider, model, temperature, system prompt or SpaceMolt endpoint", Args: oneMysis(),
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
			if fl.Changed("endpoint") {
				e := endpointValue(endpoint)
				req.SpacemoltEndpoint = &e
			}
			return ep.call(cmd, present.Subject{Mysis: args[0]}, func(ctx context.Context, c *clients) error {
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
	cmd.Flags().StringVar(&endpoint, "endpoint", "", "SpaceMolt MCP endpoint: v1 (/mcp), v2 (/mcp/v2) or swarm (the swarm's); taken at its next turn")
	return cmd
}

func broadcastCmd(ep *endpoints) *cobra.Command {
	return &cobra.Command{
		Use: "broadcast TEXT", Short: "Broadcast a mission to every mysis", Args: argsBetween(1, -1, "the mission text"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ep.call(cmd, present.Subject{Service: "bus"}, func(ctx context.Context, c *clients) error {
				resp, err := c.bus.Broadcast(ctx, &busv1.BroadcastRequest{Content: strings.Join(args, " ")})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "broadcast %s delivered to %d myses\n", resp.GetBroadcastId(), resp.GetTargetCount())
				return nil
			})
		},
	}
}

func sendCmd(ep *endpoints) *cobra.Command {
	return &cobra.Command{
		Use: "send MYSIS TEXT", Short: "Send a direct message to one mysis (wakes it when idle)", Args: argsBetween(2, -1, "a mysis and the message text"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ep.call(cmd, present.Subject{Mysis: args[0], Service: "bus"}, func(ctx context.Context, c *clients) error {
				resp, err := c.bus.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: args[0], Content: strings.Join(args[1:], " ")})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "sent to %s: memory #%d (seq %d, turn %d)\n", args[0], resp.GetMemory().GetId(), resp.GetMemory().GetSeq(), resp.GetMemory().GetTurn())
				return nil
			})
		},
	}
}

// resolve finds a mysis by name or id through the runner, which accepts both.
func resolve(ctx context.Context, c *clients, ref string) (*memoryv1.Mysis, error) {
	resp, err := c.swarm.GetMysis(ctx, &runnerv1.GetMysisRequest{Mysis: ref})
	if err != nil {
		return nil, err
	}
	return resp.GetStatus().GetMysis(), nil
}

func searchCmd(ep *endpoints) *cobra.Command {
	var limit int32
	var reasoning, broadcasts, nudges bool
	var order string
	cmd := &cobra.Command{
		Use:   "search [MYSIS] QUERY",
		Short: "Ranked full-text search of a mysis's messages and tool calls (or --reasoning), or of all broadcasts (--broadcasts)",
		Long: "QUERY is plain words or a question (\"where did I sell copper ore?\"): any word may match, rare words weigh\n" +
			"most, other forms count (went/go, copper ore/copper_ore); \"exact phrases\" are required and -word excludes. A\n" +
			"mysis's tool calls are found by name and arguments (sell, titanium_ore). --order relevance (default) ranks the\n" +
			"whole history best first (BM25); --order recency lists the newest matches first. The first line says how many\n" +
			"memories matched.",
		Args: argsBetween(1, 2, "a mysis and a query, or with --broadcasts a query alone"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := searchOrder(order)
			if err != nil {
				return err
			}
			if o != memoryv1.SearchOrder_SEARCH_ORDER_RELEVANCE && (reasoning || broadcasts) {
				return fmt.Errorf("--order recency applies to message search only")
			}
			sub := present.Subject{Service: "memory"}
			if !broadcasts && len(args) == 2 {
				sub.Mysis = args[0]
			}
			return ep.call(cmd, sub, func(ctx context.Context, c *clients) error {
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
				var matches int64
				var estimated bool
				var note string
				if reasoning {
					resp, err := c.memory.SearchReasoning(ctx, &memoryv1.SearchReasoningRequest{MysisId: m.GetId(), Query: args[1], Limit: limit})
					if err != nil {
						return err
					}
					hits, matches, estimated, note = resp.GetHits(), resp.GetMatches(), resp.GetMatchesEstimated(), resp.GetNote()
				} else {
					resp, err := c.memory.SearchMessages(ctx, &memoryv1.SearchMessagesRequest{MysisId: m.GetId(), Query: args[1], Limit: limit,
						IncludeNudges: nudges, Order: o})
					if err != nil {
						return err
					}
					hits, matches, estimated, note = resp.GetHits(), resp.GetMatches(), resp.GetMatchesEstimated(), resp.GetNote()
				}
				fmt.Fprintln(w, searchSummary(len(hits), matches, estimated, note))
				for _, h := range hits {
					mem := h.GetMemory()
					fmt.Fprintf(w, "%s  #%d  %.3f  %s\n", present.RowHeader(mem), mem.GetId(), h.GetRank(), present.OneLine(h.GetSnippet()))
				}
				return nil
			})
		},
	}
	cmd.Flags().Int32Var(&limit, "limit", 20, "max hits (≤ 100)")
	cmd.Flags().BoolVar(&reasoning, "reasoning", false, "search reasoning instead of messages")
	cmd.Flags().BoolVar(&broadcasts, "broadcasts", false, "search every broadcast")
	cmd.Flags().BoolVar(&nudges, "include-nudges", false, "include nudges")
	cmd.Flags().StringVar(&order, "order", "relevance", "relevance (best first over the whole history) or recency (newest first)")
	return cmd
}

// searchSummary is the line above a search's hits: how many are shown of how many memories matched, and the
// service's note when it has one.
func searchSummary(shown int, matches int64, estimated bool, note string) string {
	of := fmt.Sprint(matches)
	if estimated {
		of = "at least " + of
	}
	s := fmt.Sprintf("%d shown of %s matching memories", shown, of)
	if note != "" {
		s += " — " + note
	}
	return s
}

// searchOrder parses --order.
func searchOrder(s string) (memoryv1.SearchOrder, error) {
	switch s {
	case "relevance", "":
		return memoryv1.SearchOrder_SEARCH_ORDER_RELEVANCE, nil
	case "recency":
		return memoryv1.SearchOrder_SEARCH_ORDER_RECENCY, nil
	}
	return 0, fmt.Errorf("--order: %q is neither relevance nor recency", s)
}

func previewCmd(ep *endpoints) *cobra.Command {
	var asJSON bool
	var full bool
	cmd := &cobra.Command{
		Use: "preview MYSIS", Short: "Show what the composer would send to the LLM now, and why each message is there", Args: oneMysis(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ep.call(cmd, present.Subject{Mysis: args[0]}, func(ctx context.Context, c *clients) error {
				resp, err := c.swarm.PreviewContext(ctx, &runnerv1.PreviewContextRequest{Mysis: args[0]})
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), resp)
				}
				running := false
				if st, err := c.swarm.GetMysis(ctx, &runnerv1.GetMysisRequest{Mysis: args[0]}); err == nil {
					running = st.GetStatus().GetMysis().GetState() == memoryv1.MysisState_MYSIS_STATE_RUNNING
				}
				clipAt := 600
				if full {
					clipAt = 0
				}
				for _, l := range present.PreviewText(present.ExplainPreview(resp, running), clipAt) {
					fmt.Fprintln(cmd.OutOrStdout(), l)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the full response as JSON: messages, manifest entries (memory id, seq, message_index, reason, tokens), encouragement")
	cmd.Flags().BoolVar(&full, "full", false, "print every message whole instead of its first 600 characters")
	return cmd
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := text.Cut(s, n)
	return cut + fmt.Sprintf("… (%d more bytes)", len(s)-len(cut))
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

func historyCmd(ep *endpoints) *cobra.Command {
	var limit int32
	var follow bool
	cmd := &cobra.Command{
		Use: "history MYSIS", Short: "Show a mysis's most recent memories (--follow keeps printing new ones)", Args: oneMysis(),
		RunE: func(cmd *cobra.Command, args []string) error {
			var m *memoryv1.Mysis
			var last int64
			w := cmd.OutOrStdout()
			err := ep.call(cmd, present.Subject{Mysis: args[0]}, func(ctx context.Context, c *clients) error {
				var err error
				if m, err = resolve(ctx, c, args[0]); err != nil {
					return err
				}
				resp, err := c.memory.ListRecentMemories(ctx, &memoryv1.ListRecentMemoriesRequest{MysisId: m.GetId(), Limit: limit})
				if err != nil {
					return err
				}
				for _, mem := range resp.GetMemories() {
					printMemory(w, mem)
					last = max(last, mem.GetSeq())
				}
				return nil
			})
			if err != nil || !follow {
				return err
			}
			return followHistory(cmd, ep, m, last)
		},
	}
	cmd.Flags().Int32Var(&limit, "limit", 20, "how many")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new memories as they are stored, until Ctrl-C")
	return cmd
}

func printMemory(w io.Writer, mem *memoryv1.Memory) {
	fmt.Fprintln(w, present.RowHeader(mem))
	if mem.GetContent() != "" {
		fmt.Fprintln(w, indent(clip(mem.GetContent(), 300)))
	}
	for _, tc := range mem.GetToolCalls() {
		fmt.Fprintf(w, "    → %s(%s)\n", tc.GetName(), tc.GetArgumentsJson())
	}
}

// followHistory prints memories after seq last as the mysis stores them. It wakes on the bus's events for this
// mysis and reads the rows from the memory service, so nothing is missed when events are merged or dropped.
func followHistory(cmd *cobra.Command, ep *endpoints, m *memoryv1.Mysis, last int64) error {
	c, err := ep.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := cmd.Context()
	stream, err := c.bus.WatchEvents(ctx, &busv1.WatchEventsRequest{MysisIds: []string{m.GetId()}})
	if err != nil {
		return present.Explain(err, present.Subject{Service: "bus", Addr: ep.bus})
	}
	events := make(chan error, 1)
	go func() {
		for {
			if _, err := stream.Recv(); err != nil {
				events <- err
				return
			}
			select {
			case events <- nil:
			default: // a read is already due: it will see this row too
			}
		}
	}()
	// Rows stored between the first listing and the subscription are read on the first pass.
	for pending := true; ; pending = false {
		if !pending {
			select {
			case err := <-events:
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return present.Explain(err, present.Subject{Service: "bus", Addr: ep.bus})
				}
			case <-ctx.Done():
				return nil
			}
		}
		for {
			rctx, cancel := context.WithTimeout(ctx, ep.timeout)
			resp, err := c.memory.ListMemoriesRange(rctx, &memoryv1.ListMemoriesRangeRequest{MysisId: m.GetId(), FromSeq: last + 1, Limit: 200})
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return present.Explain(err, present.Subject{Service: "memory", Addr: ep.memory, Mysis: m.GetName()})
			}
			for _, mem := range resp.GetMemories() {
				printMemory(cmd.OutOrStdout(), mem)
				last = max(last, mem.GetSeq())
			}
			if len(resp.GetMemories()) < 200 {
				break
			}
		}
	}
}

func watchCmd(ep *endpoints) *cobra.Command {
	var myses []string
	var asJSON bool
	cmd := &cobra.Command{
		Use: "watch", Short: "Stream swarm events until Ctrl-C (--mysis takes names or ids)", Args: noArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := ep.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			ctx := cmd.Context()
			names := newNameBook(c)
			var ids []string
			for _, ref := range myses {
				rctx, cancel := context.WithTimeout(ctx, ep.timeout)
				m, err := resolve(rctx, c, ref)
				if err != nil {
					known := mysisNames(rctx, c)
					cancel()
					return present.Explain(err, present.Subject{Mysis: ref, Service: "runner", Addr: ep.runner, Known: known})
				}
				cancel()
				ids = append(ids, m.GetId())
				names.put(m.GetId(), m.GetName())
			}
			stream, err := c.bus.WatchEvents(ctx, &busv1.WatchEventsRequest{MysisIds: ids})
			if err != nil {
				return present.Explain(err, present.Subject{Service: "bus", Addr: ep.bus})
			}
			w := cmd.OutOrStdout()
			for {
				resp, err := stream.Recv()
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return present.Explain(err, present.Subject{Service: "bus", Addr: ep.bus})
				}
				e := resp.GetEvent()
				name := names.get(ctx, e.GetMysisId())
				if asJSON {
					b, _ := protojson.Marshal(e)
					fmt.Fprintf(w, "{\"mysis_name\":%q,\"event\":%s}\n", name, b)
					continue
				}
				fmt.Fprintf(w, "%s  %-12s %s\n", e.GetAt().AsTime().Local().Format(time.TimeOnly), name, present.Event(e))
			}
		},
	}
	cmd.Flags().StringSliceVar(&myses, "mysis", nil, "only these myses (names or ids; repeat or separate with commas)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each event as JSON with the mysis name")
	return cmd
}

// nameBook maps mysis ids to names for event lines, asking the runner once per unknown id.
type nameBook struct {
	c     *clients
	names map[string]string
}

func newNameBook(c *clients) *nameBook { return &nameBook{c: c, names: map[string]string{}} }

func (b *nameBook) put(id, name string) { b.names[id] = name }

func (b *nameBook) get(ctx context.Context, id string) string {
	if n, ok := b.names[id]; ok {
		return n
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	name := id // a mysis deleted meanwhile keeps its id
	if resp, err := b.c.swarm.GetMysis(ctx, &runnerv1.GetMysisRequest{Mysis: id}); err == nil {
		name = resp.GetStatus().GetMysis().GetName()
	}
	b.names[id] = name
	return name
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
