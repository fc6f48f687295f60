package game

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestStarterLoopEarnsCredits(t *testing.T) {
	w := newWorldT(t, Config{})
	reg := w.register("alice")
	sid := reg.SessionID
	if reg.Player.Credits != StartingCredits || reg.POI.ID != HomeStation || reg.Player.DockedAtBase != HomeBase ||
		reg.Player.LastActiveAt != reg.Player.CreatedAt || reg.Player.LastLoginAt != reg.Player.CreatedAt || reg.Player.SkillXP == nil || len(reg.Password) != 64 {
		t.Fatalf("register result = %+v", reg)
	}
	ctx := context.Background()
	w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Undock(ctx, sid) }))
	start := w.e.CurrentTick()
	tr := w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Travel(ctx, sid, HomeBelt) })).(*TravelResult)
	if tr.Action != "travel" || tr.POIID != HomeBelt || tr.POI != "Main Belt" || tr.OnlinePlayersCount != 0 || tr.OnlinePlayers == nil {
		t.Fatalf("travel = %+v", tr)
	}
	if got := w.e.CurrentTick() - start; got != 2 {
		t.Fatalf("travel of 2 AU took %d ticks, want 2", got)
	}
	mined := map[string]int{}
	for range 10 {
		m := w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Mine(ctx, sid) })).(*MineResult)
		if m.Command != "mine" || m.Pending || m.Quantity != 5 {
			t.Fatalf("mine = %+v", m)
		}
		mined[m.ResourceID] += m.Quantity
	}
	if mined["iron_ore"] == 0 || mined["iron_ore"]+mined["copper_ore"] != 50 {
		t.Fatalf("mined %v, want 50 units with some iron", mined)
	}
	w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Travel(ctx, sid, HomeStation) }))
	w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Dock(ctx, sid) }))
	s := w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Sell(ctx, sid, "iron_ore", 1000) })).(*SellResult)
	if s.QuantitySold != mined["iron_ore"] || s.TotalEarned != 5*mined["iron_ore"] || s.Item != "Iron Ore" ||
		len(s.Fills) == 0 || s.Fills[0].Subtotal != s.Fills[0].Quantity*s.Fills[0].PriceEach {
		t.Fatalf("sell = %+v (mined %v)", s, mined)
	}
	r := w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Refuel(ctx, sid) })).(*RefuelResult)
	if r.Fuel != 100 || r.FuelNow != 100 || r.Source != "credits" || r.Cost != 4 {
		t.Fatalf("refuel = %+v", r)
	}
	st, err := w.e.Status(sid)
	if err != nil || st.Player.Credits != 100+s.TotalEarned-4 || st.Player.CurrentPOI != HomeStation {
		t.Fatalf("status = %+v, %v", st, err)
	}
	// The lifetime counters follow the play: 10 mines of 5, one sale, 4 credits of fuel, 2 AU out and back.
	want := PlayerStatsView{CreditsEarned: s.TotalEarned, CreditsSpent: 4, OreMined: 50, DistanceTraveled: 4, TradesCompleted: 1, SystemsExplored: 1}
	if st.Player.Stats != want {
		t.Fatalf("stats = %+v, want %+v", st.Player.Stats, want)
	}
	stats := w.e.Stats()
	if len(stats.Players) != 1 || stats.Players[0].OreMined != 50 || stats.Players[0].CreditsEarned != s.TotalEarned || stats.Players[0].Ticks != 16 {
		t.Fatalf("stats = %+v", stats.Players)
	}
	_ = ctx
}

func TestMutationErrors(t *testing.T) {
	w := newWorldT(t, Config{MutationsPerMinute: -1})
	sid := w.register("bob").SessionID
	run := func(f func(ctx context.Context) (any, error)) error { _, err := w.act(f); return err }

	wantCode(t, run(func(ctx context.Context) (any, error) { return w.e.Dock(ctx, sid) }), CodeAlreadyDocked)
	// Mining while docked undocks first (auto_undocked); a station has no ore: no_resources.
	wantCode(t, run(func(ctx context.Context) (any, error) { return w.e.Mine(ctx, sid) }), CodeNoResources)
	if st, _ := w.e.Status(sid); st.Player.DockedAtBase != "" {
		t.Fatalf("after mining while docked the player is still docked at %s", st.Player.DockedAtBase)
	}
	wantCode(t, run(func(ctx context.Context) (any, error) { return w.e.Buy(ctx, sid, "iron_ore", 71) }), CodeNoCargoSpace)
	wantCode(t, run(func(ctx context.Context) (any, error) { return w.e.Buy(ctx, sid, "iron_ore", 60) }), CodeNoCredits)
	wantCode(t, run(func(ctx context.Context) (any, error) { return w.e.Buy(ctx, sid, "unobtainium", 1) }), CodeItemNotAvailable)
	wantCode(t, run(func(ctx context.Context) (any, error) { return w.e.Sell(ctx, sid, "iron_ore", 1) }), CodeItemNotAvailable)
	wantCode(t, run(func(ctx context.Context) (any, error) { return w.e.Travel(ctx, sid, "nowhere") }), CodeInvalidPOI)
	wantCode(t, run(func(ctx context.Context) (any, error) { return w.e.Jump(ctx, sid, "nowhere") }), CodeInvalidSystem)

	var neighbour, far string
	var farPOI string
	w.e.mu.RLock()
	sol := w.e.w().system(HomeSystem)
	neighbour = sol.Connections[0].SystemID
	for _, s := range w.e.w().systems {
		if _, ok := sol.connection(s.ID); !ok && s.ID != HomeSystem {
			far, farPOI = s.ID, s.POIs[0].ID
			break
		}
	}
	w.e.mu.RUnlock()
	wantCode(t, run(func(ctx context.Context) (any, error) { return w.e.Jump(ctx, sid, far) }), CodeNotConnected)
	wantCode(t, run(func(ctx context.Context) (any, error) { return w.e.Travel(ctx, sid, farPOI) }), CodeWrongSystem)

	w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Dock(ctx, sid) })) // mining undocked it above
	w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Undock(ctx, sid) }))
	wantCode(t, run(func(ctx context.Context) (any, error) { return w.e.Undock(ctx, sid) }), CodeNotDocked)
	wantCode(t, run(func(ctx context.Context) (any, error) { return w.e.Mine(ctx, sid) }), CodeNoResources)
	w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Travel(ctx, sid, StrippedBelt) }))
	wantCode(t, run(func(ctx context.Context) (any, error) { return w.e.Mine(ctx, sid) }), CodeDepositTooSparse)
	wantCode(t, run(func(ctx context.Context) (any, error) { return w.e.Dock(ctx, sid) }), CodeInvalidPOI)
	wantCode(t, run(func(ctx context.Context) (any, error) { return w.e.Sell(ctx, sid, "iron_ore", 1) }), CodeNotDocked)
	wantCode(t, run(func(ctx context.Context) (any, error) { return w.e.Refuel(ctx, sid) }), CodeNotDocked)

	w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Travel(ctx, sid, HomeBelt) }))
	for range 14 {
		w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Mine(ctx, sid) }))
	}
	wantCode(t, run(func(ctx context.Context) (any, error) { return w.e.Mine(ctx, sid) }), CodeCargoFull)

	// Burn fuel jumping between sol and a neighbour until a jump is refused.
	var last error
	for i := 0; i < 60 && last == nil; i++ {
		target := neighbour
		if i%2 == 1 {
			target = HomeSystem
		}
		_, last = w.act(func(ctx context.Context) (any, error) { return w.e.Jump(ctx, sid, target) })
	}
	wantCode(t, last, CodeNoFuel)
}

func TestActionPendingAndInTransit(t *testing.T) {
	w := newWorldT(t, Config{Tick: 10 * time.Second})
	reg := w.register("carol")
	sid := reg.SessionID
	done := make(chan error, 1)
	go func() { _, err := w.e.Undock(context.Background(), sid); done <- err }()
	waitPending(t, w.e, 1)
	_, err := w.e.Mine(context.Background(), sid)
	wantCode(t, err, CodeActionPending)
	w.e.Tick()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	go func() { _, err := w.e.Travel(context.Background(), sid, StrippedBelt); done <- err }() // 4 AU: 4 ticks
	waitPending(t, w.e, 1)
	w.e.Tick() // departs
	other, err := w.e.Login("carol", reg.Password)
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.e.Mine(context.Background(), other.SessionID)
	ge := wantCode(t, err, CodeInTransit)
	if ge.SecondsRemaining != 30 || !strings.Contains(ge.Message, "30 seconds") {
		t.Fatalf("in_transit = %+v, want 30 seconds remaining (3 ticks of 10s)", ge)
	}
	sys, err := w.e.System(other.SessionID)
	if err != nil || sys.System == nil || sys.System.ID != HomeSystem || sys.InTransit {
		t.Fatalf("get_system travelling inside the system = %+v %v", sys, err)
	}
	poi, err := w.e.POI(other.SessionID)
	if err != nil || !poi.InTransit || poi.ToPOI != StrippedBelt || poi.TicksRemaining == nil || *poi.TicksRemaining != 3 || poi.POI != nil {
		t.Fatalf("get_poi in transit = %+v %v", poi, err)
	}
	mid, _ := w.e.Status(other.SessionID)
	if !mid.Player.InTransit || mid.Player.Transit.ToPOI != StrippedBelt || mid.Player.CurrentPOI != HomeStation {
		t.Fatalf("status in transit = %+v", mid.Player)
	}
	for range 3 {
		select {
		case err := <-done:
			t.Fatalf("travel returned before arrival: %v", err)
		default:
		}
		w.e.Tick()
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st, _ := w.e.Status(other.SessionID)
	if st.Player.InTransit || st.Player.Transit != nil || st.Player.CurrentPOI != StrippedBelt {
		t.Fatalf("after arrival status = %+v", st.Player)
	}
}

func waitPending(t *testing.T, e *Engine, n int) {
	t.Helper()
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	for {
		queued := e.Queued()
		if e.Pending() >= n {
			return
		}
		select {
		case <-queued:
		case <-deadline.C:
			t.Fatalf("never saw %d pending actions", n)
		}
	}
}

func TestAccountsAndSessions(t *testing.T) {
	w := newWorldT(t, Config{RegistrationCode: "s3cret"})
	_, err := w.e.Register("dave", "solarian", "wrong")
	wantCode(t, err, CodeInvalidRegistration)
	reg, err := w.e.Register("dave", "solarian", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.e.Register("DAVE", "voidborn", "s3cret")
	wantCode(t, err, CodeUsernameTaken)
	for _, bad := range []string{"ab", strings.Repeat("x", 25), "bad name"} {
		_, err = w.e.Register(bad, "solarian", "s3cret")
		wantCode(t, err, CodeInvalidUsername)
	}
	_, err = w.e.Register("erin", "martian", "s3cret")
	wantCode(t, err, CodeInvalidEmpire)
	_, err = w.e.Login("dave", "nope")
	wantCode(t, err, CodeAuthFailed)
	_, err = w.e.Login("nobody", reg.Password)
	wantCode(t, err, CodeAuthFailed)

	_, err = w.e.Status("")
	wantCode(t, err, CodeSessionRequired)
	_, err = w.e.Status("feedface")
	wantCode(t, err, CodeSessionInvalid)

	// A new login displaces the old session.
	l, err := w.e.Login("dave", reg.Password)
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.e.Status(reg.SessionID)
	wantCode(t, err, CodeSessionInvalid)

	// Requests renew the session; silence expires it.
	w.clock.Advance(29 * time.Minute)
	if _, err := w.e.Status(l.SessionID); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(29 * time.Minute)
	if _, err := w.e.Status(l.SessionID); err != nil {
		t.Fatalf("session expired although renewed 29 min ago: %v", err)
	}
	w.clock.Advance(31 * time.Minute)
	_, err = w.e.Status(l.SessionID)
	wantCode(t, err, CodeSessionInvalid)

	// Logout leaves the session unauthenticated.
	l, _ = w.e.Login("dave", reg.Password)
	if _, err := w.e.Logout(l.SessionID); err != nil {
		t.Fatal(err)
	}
	_, err = w.e.Status(l.SessionID)
	wantCode(t, err, CodeNotAuthenticated)
}

func TestSessionSweepForgetsExpiredSessions(t *testing.T) {
	w := newWorldT(t, Config{SessionTTL: time.Minute})
	for _, n := range []string{"user1", "user2", "user3"} {
		w.register(n)
	}
	w.clock.Advance(2 * time.Minute)
	w.e.Tick()
	w.e.sessMu.RLock()
	n, c := len(w.e.sessions), len(w.e.current)
	w.e.sessMu.RUnlock()
	if n != 0 || c != 0 {
		t.Fatalf("after sweep: %d sessions, %d current; want 0", n, c)
	}
}

func TestRateLimits(t *testing.T) {
	w := newWorldT(t, Config{ReadsPerMinute: 3, ChatPerMinute: 1, MutationsPerMinute: 2})
	sid := w.register("frank").SessionID
	for range 3 {
		if _, err := w.e.Status(sid); err != nil {
			t.Fatal(err)
		}
	}
	_, err := w.e.Status(sid)
	ge := wantCode(t, err, CodeRateLimited)
	if ge.RetryAfter != 20 || !strings.Contains(ge.Message, "retry_after: 20") {
		t.Fatalf("rate_limited = %+v, want retry_after 20s (3/min)", ge)
	}
	w.clock.Advance(20 * time.Second)
	if _, err := w.e.Status(sid); err != nil {
		t.Fatalf("after retry_after: %v", err)
	}
	if _, err := w.e.Chat(sid, "system", "hi", ""); err != nil {
		t.Fatal(err)
	}
	_, err = w.e.Chat(sid, "system", "hi again", "")
	wantCode(t, err, CodeRateLimited)
	for range 2 {
		w.act(func(ctx context.Context) (any, error) { return w.e.Dock(ctx, sid) })
	}
	_, err = w.e.Dock(context.Background(), sid)
	wantCode(t, err, CodeRateLimited)
	if st := w.e.Stats(); st.Players[0].Errors != 5 {
		t.Fatalf("errors = %d, want 5 (2 docked, 3 rate limited)", st.Players[0].Errors)
	}
}

func TestNotificationsQueueAndThrottle(t *testing.T) {
	w := newWorldT(t, Config{ChatPerMinute: -1, NotificationCap: 100})
	a := w.register("gina").SessionID
	b := w.register("hank").SessionID
	// Drain the welcome notification.
	n, err := w.e.Notifications(b, 100, true)
	if err != nil || n.Count != 1 || n.Notifications[0].MsgType != "welcome" {
		t.Fatalf("first fetch = %+v %v", n, err)
	}
	n, _ = w.e.Notifications(b, 100, true)
	if !n.Throttled || n.Count != 0 {
		t.Fatalf("second fetch in the same tick = %+v, want throttled", n)
	}
	for i := range 120 {
		if _, err := w.e.Chat(a, "local", "msg "+itoa(i), ""); err != nil {
			t.Fatal(err)
		}
	}
	w.e.Tick()
	n, _ = w.e.Notifications(b, 10, false)
	if n.Count != 10 || n.Remaining != 90 || n.Notifications[0].Data["content"] != "msg 20" {
		t.Fatalf("fetch without clear = count %d remaining %d first %v; want 10, 90, msg 20 (oldest dropped past 100)", n.Count, n.Remaining, n.Notifications[0].Data)
	}
	w.e.Tick()
	n, _ = w.e.Notifications(b, 100, true)
	if n.Count != 100 || n.Remaining != 0 || n.CurrentTick != 2 {
		t.Fatalf("fetch with clear = count %d remaining %d tick %d", n.Count, n.Remaining, n.CurrentTick)
	}
	if _, err := w.e.Chat(a, "private", "psst", "nobody"); code(err) != CodePlayerNotFound {
		t.Fatalf("private to unknown = %v", err)
	}
	if _, err := w.e.Chat(a, "local", "   ", ""); code(err) != CodeEmptyEntry {
		t.Fatalf("empty chat = %v", err)
	}
	if _, err := w.e.Chat(a, "local", strings.Repeat("x", 501), ""); code(err) != CodeInvalidPayload {
		t.Fatalf("long chat = %v", err)
	}
	r, err := w.e.Chat(a, "private", "psst", "hank")
	if err != nil || r.Recipients != 1 {
		t.Fatalf("private chat = %+v %v", r, err)
	}
}

func TestCaptainsLog(t *testing.T) {
	w := newWorldT(t, Config{ReadsPerMinute: -1})
	sid := w.register("ivy").SessionID
	l, err := w.e.LogList(sid, 0)
	if err != nil || l.Entry != nil || l.TotalCount != 0 {
		t.Fatalf("empty log = %+v %v", l, err)
	}
	_, err = w.e.LogAdd(sid, " \n ")
	wantCode(t, err, CodeEmptyEntry)
	_, err = w.e.LogAdd(sid, strings.Repeat("x", LogMaxBytes+1))
	wantCode(t, err, CodeInvalidPayload)
	if _, err := w.e.LogAdd(sid, strings.Repeat("x", LogMaxBytes)); err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		r, err := w.e.LogAdd(sid, "entry "+itoa(i))
		if err != nil || r.Index != 0 {
			t.Fatalf("add = %+v %v", r, err)
		}
	}
	l, _ = w.e.LogList(sid, 0)
	if l.Entry.Entry != "entry 24" || l.TotalCount != LogKeep {
		t.Fatalf("newest = %q of %d", l.Entry.Entry, l.TotalCount)
	}
	l, _ = w.e.LogList(sid, 19)
	if l.Entry.Entry != "entry 5" {
		t.Fatalf("oldest kept = %q", l.Entry.Entry)
	}
	_, err = w.e.LogList(sid, 20)
	wantCode(t, err, CodeInvalidPayload)
}

func TestTickResolvesInRegistrationOrder(t *testing.T) {
	w := newWorldT(t, Config{})
	var sids []string
	for _, n := range []string{"first", "second", "third"} {
		sid := w.register(n).SessionID
		sids = append(sids, sid)
		w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Undock(ctx, sid) }))
		w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Travel(ctx, sid, HomeBelt) }))
	}
	w.e.mu.Lock()
	for _, d := range w.e.w().poi(HomeBelt).Deposits {
		d.Remaining, d.RegenPerTick = 0, 0
	}
	w.e.w().poi(HomeBelt).Deposits[0].Remaining = 7
	w.e.mu.Unlock()

	// Queue in reverse order; the tick must still serve "first" first.
	var wg sync.WaitGroup
	results := make([]any, 3)
	errs := make([]error, 3)
	for i := 2; i >= 0; i-- {
		wg.Add(1)
		go func() { defer wg.Done(); results[i], errs[i] = w.e.Mine(context.Background(), sids[i]) }()
		waitPending(t, w.e, 3-i)
	}
	w.e.Tick()
	wg.Wait()
	if m, ok := results[0].(*MineResult); !ok || m.Quantity != 5 {
		t.Fatalf("first = %+v %v", results[0], errs[0])
	}
	if m, ok := results[1].(*MineResult); !ok || m.Quantity != 2 || m.Remaining != 0 {
		t.Fatalf("second = %+v %v", results[1], errs[1])
	}
	wantCode(t, errs[2], CodeDepositTooSparse)
}

func TestDepositsRefill(t *testing.T) {
	w := newWorldT(t, Config{})
	w.e.mu.Lock()
	d := w.e.w().poi(HomeBelt).Deposits[0]
	d.Remaining = 0
	w.e.mu.Unlock()
	for range 10 {
		w.e.Tick()
	}
	w.e.mu.RLock()
	got := d.Remaining
	w.e.mu.RUnlock()
	if got != 10*d.RegenPerTick {
		t.Fatalf("remaining after 10 ticks = %d, want %d", got, 10*d.RegenPerTick)
	}
}

func TestResetFailsWaitingCallsAndStartsOver(t *testing.T) {
	w := newWorldT(t, Config{})
	sid := w.register("jack").SessionID
	done := make(chan error, 1)
	go func() { _, err := w.e.Undock(context.Background(), sid); done <- err }()
	waitPending(t, w.e, 1)
	w.e.Reset()
	wantCode(t, <-done, CodeServerReset)
	_, err := w.e.Status(sid)
	wantCode(t, err, CodeSessionInvalid)
	if st := w.e.Stats(); len(st.Players) != 0 || st.CurrentTick != 0 {
		t.Fatalf("after reset: %+v", st)
	}
	w.register("jack") // the name is free again
}

func TestHelpNeedsNoSession(t *testing.T) {
	e := New(Config{})
	if h := e.Help(""); !strings.Contains(h.Text, "main_belt") {
		t.Fatalf("help = %q", h.Text)
	}
	if h := e.Help("travel"); !strings.Contains(h.Text, "0.07") {
		t.Fatalf("help travel = %q", h.Text)
	}
	if h := e.Help("bogus"); !strings.Contains(h.Text, "Topics:") {
		t.Fatalf("help bogus = %q", h.Text)
	}
}
