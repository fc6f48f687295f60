package game

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// TestRestoreContinuesTheUniverse plays a little (mine, sell, travel away), saves, restores into a new engine and
// checks the account logs in with its password and finds its credits, cargo, place, log and the depleted belt as
// they were, while a new registration gets fresh ids.
func TestRestoreContinuesTheUniverse(t *testing.T) {
	w := newWorldT(t, Config{MutationsPerMinute: -1, ReadsPerMinute: -1})
	reg := w.register("miner-1")
	sid := reg.SessionID
	w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Travel(ctx, sid, "main_belt") }))
	for range 3 {
		w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Mine(ctx, sid) }))
	}
	w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Travel(ctx, sid, HomeStation) }))
	cargo := w.must(w.e.Cargo(sid)).(*CargoResult)
	if len(cargo.Cargo) == 0 {
		t.Fatalf("mined nothing: %+v", cargo)
	}
	item := cargo.Cargo[0]
	w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Sell(ctx, sid, item.ItemID, 1) }))
	w.must(w.e.LogAdd(sid, "sold one ore"))
	before := w.must(w.e.Status(sid)).(*StatusResult)
	beforeCargo := w.must(w.e.Cargo(sid)).(*CargoResult)
	beforeStats := w.e.Stats()

	st, err := w.e.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), reg.Password) {
		t.Fatal("the state file must not hold a plain password")
	}
	var back State
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	e2, err := Restore(Config{Seed: 42, Now: w.clock.Now, MutationsPerMinute: -1, ReadsPerMinute: -1}, back)
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	w2 := &world{t: t, e: e2, clock: w.clock}

	if _, err := e2.Status(sid); code(err) != CodeSessionInvalid {
		t.Fatalf("sessions must not survive a restart, got %v", err)
	}
	if _, err := e2.Login("miner-1", "wrong"); code(err) != CodeAuthFailed {
		t.Fatalf("wrong password accepted: %v", err)
	}
	login := w2.must(e2.Login("miner-1", reg.Password)).(*LoginResult)
	sid2 := login.SessionID
	after := w2.must(e2.Status(sid2)).(*StatusResult)
	if after.Player.Credits != before.Player.Credits || after.Player.CurrentPOI != before.Player.CurrentPOI ||
		after.Player.CreatedAt != before.Player.CreatedAt || after.Player.Stats != before.Player.Stats {
		t.Fatalf("player did not continue: before %+v after %+v", before.Player, after.Player)
	}
	afterCargo := w2.must(e2.Cargo(sid2)).(*CargoResult)
	if len(afterCargo.Cargo) != len(beforeCargo.Cargo) || afterCargo.Used != beforeCargo.Used {
		t.Fatalf("cargo: before %+v after %+v", beforeCargo, afterCargo)
	}
	logs := w2.must(e2.LogList(sid2, 0)).(*LogListResult)
	if logs.Entry == nil || !strings.Contains(logs.Entry.Entry, "sold one ore") {
		t.Fatalf("captain's log lost: %+v", logs)
	}
	if e2.CurrentTick() != w.e.CurrentTick() {
		t.Fatalf("tick %d, want %d", e2.CurrentTick(), w.e.CurrentTick())
	}
	afterStats := e2.Stats()
	if afterStats.Players[0].CreditsEarned != beforeStats.Players[0].CreditsEarned || afterStats.Players[0].CreditsEarned == 0 {
		t.Fatalf("earned credits: before %+v after %+v", beforeStats.Players[0], afterStats.Players[0])
	}
	if got, want := findDeposit(e2.w(), "main_belt", item.ItemID).Remaining, findDeposit(w.e.w(), "main_belt", item.ItemID).Remaining; got != want {
		t.Fatalf("deposit %s remaining %d, want %d", item.ItemID, got, want)
	}
	// The game goes on: a sale after the restart adds to the restored credits, and a newcomer gets a new id.
	w2.must(w2.act(func(ctx context.Context) (any, error) { return e2.Sell(ctx, sid2, item.ItemID, 1) }))
	if now := w2.must(e2.Status(sid2)).(*StatusResult); now.Player.Credits <= before.Player.Credits {
		t.Fatalf("credits did not grow after the restart: %d → %d", before.Player.Credits, now.Player.Credits)
	}
	other := w2.register("miner-2")
	if other.PlayerID == reg.PlayerID {
		t.Fatal("restored id generator handed out an id again")
	}
	if _, err := e2.Register("miner-1", "solarian", ""); code(err) != CodeUsernameTaken {
		t.Fatalf("restored username must stay taken: %v", err)
	}
}

func TestSnapshotPutsATravellerAtItsDestination(t *testing.T) {
	w := newWorldT(t, Config{MutationsPerMinute: -1})
	sid := w.register("runner-1").SessionID
	done := make(chan error, 1)
	go func() { _, err := w.e.Travel(context.Background(), sid, "kuiper_belt"); done <- err }()
	for w.e.Pending() == 0 {
		// the call queues its mutation; wait for it without ticking
		runtime.Gosched()
		select {
		case err := <-done:
			t.Fatalf("travel ended before a tick: %v", err)
		default:
		}
	}
	w.e.Tick() // departs; kuiper_belt is several ticks away
	st, err := w.e.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if p := st.Players[0]; p.POIID != "kuiper_belt" || p.DockedAt != "" {
		t.Fatalf("traveller saved at %q docked %q, want kuiper_belt undocked", p.POIID, p.DockedAt)
	}
	for w.e.Pending() > 0 {
		w.e.Tick()
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRestoreRefusesAMismatch(t *testing.T) {
	w := newWorldT(t, Config{})
	w.register("pilot-1")
	st, err := w.e.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(Config{Seed: 7}, st); err == nil || !strings.Contains(err.Error(), "seed 42") {
		t.Fatalf("another seed must be refused with the saved one named, got %v", err)
	}
	bad := st
	bad.Players = append([]PlayerState(nil), st.Players...)
	bad.Players[0].POIID = "nowhere"
	if _, err := Restore(Config{Seed: 42}, bad); err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Fatalf("an unknown poi must be refused, got %v", err)
	}
	old := st
	old.Version = 99
	if _, err := Restore(Config{Seed: 42}, old); err == nil {
		t.Fatal("an unknown version must be refused")
	}
}
