package game

import (
	"context"
	"encoding/json"
	"testing"
)

// Missions and exchange orders change the player's state for good: escrow leaves the wallet and the hold, rewards
// arrive, and both survive a restart through the state file.
func TestMissionsAndOrdersPersist(t *testing.T) {
	w := newWorldT(t, Config{MutationsPerMinute: -1, ReadsPerMinute: -1})
	reg := w.register("trader")
	sid := reg.SessionID
	p := w.e.byID[reg.PlayerID]
	p.mu.Lock()
	p.cargo["iron_ore"] = 30
	p.mu.Unlock()

	board := w.must(w.e.GetMissions(sid)).(*MissionsResult)
	var iron MissionOffer
	for _, m := range board.Missions {
		if m.TemplateID == "supply_iron_ore" {
			iron = m
		}
	}
	if iron.MissionID == "" || iron.Rewards.Credits == 0 {
		t.Fatalf("board at %s = %+v, want an iron supply run", board.BaseName, board.Missions)
	}
	w.must(w.act(func(ctx context.Context) (any, error) { return w.e.AcceptMission(ctx, sid, iron.MissionID) }))
	if again := w.must(w.e.GetMissions(sid)).(*MissionsResult); len(again.Missions) != len(board.Missions)-1 {
		t.Fatalf("an accepted mission stays off the board: %d then %d offers", len(board.Missions), len(again.Missions))
	}
	// A sell order above every bid rests (escrowing 5 iron and a fee); a buy order escrows credits.
	sell := w.must(w.act(func(ctx context.Context) (any, error) { return w.e.CreateSellOrder(ctx, sid, "Iron Ore", 5, 50) })).(*CreateOrderResult)
	buy := w.must(w.act(func(ctx context.Context) (any, error) { return w.e.CreateBuyOrder(ctx, sid, "gold_ore", 2, 10) })).(*CreateOrderResult)
	if sell.OrderID == "" || sell.QuantityListed != 5 || sell.ListingFee != 3 || buy.OrderID == "" || *buy.TotalEscrowed != 20 || buy.ListingFee != 1 {
		t.Fatalf("orders: sell %+v buy %+v", sell, buy)
	}
	st := w.must(w.e.Status(sid)).(*StatusResult)
	if want := StartingCredits - 3 - 20 - 1; st.Player.Credits != want {
		t.Fatalf("credits after escrow = %d, want %d", st.Player.Credits, want)
	}
	// One mutation per tick: a second order while the first waits is action_pending.
	done := make(chan error, 1)
	go func() {
		_, err := w.e.ModifyOrder(context.Background(), sid, buy.OrderID, 12)
		done <- err
	}()
	for {
		queued := w.e.Queued()
		if w.e.Pending() > 0 {
			break
		}
		<-queued
	}
	_, err := w.e.CancelOrder(context.Background(), sid, sell.OrderID)
	wantCode(t, err, CodeActionPending)
	w.e.Tick()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	snap, err := w.e.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(snap)
	var back State
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	e2, err := Restore(Config{Seed: 42, Now: w.clock.Now, MutationsPerMinute: -1, ReadsPerMinute: -1}, back)
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	w2 := &world{t: t, e: e2, clock: w.clock}
	sid2 := w2.must(e2.Login("trader", reg.Password)).(*LoginResult).SessionID
	active := w2.must(e2.ActiveMissions(sid2)).(*ActiveMissionsResult)
	if active.TotalCount != 1 || active.Missions[0].MissionID != iron.MissionID || !active.Missions[0].Objectives[0].Completed {
		t.Fatalf("active missions after restart = %+v", active)
	}
	orders := w2.must(e2.ViewOrders(sid2, "", "", "", "price_desc", 1, 0)).(*ViewOrdersResult)
	if orders.Total != 2 || orders.Orders[0].PriceEach != 50 || orders.Orders[1].PriceEach != 12 {
		t.Fatalf("orders after restart = %+v", orders.Orders)
	}
	before := w2.must(e2.Status(sid2)).(*StatusResult).Player.Credits
	w2.must(w2.act(func(ctx context.Context) (any, error) { return e2.CompleteMission(ctx, sid2, iron.MissionID) }))
	c := w2.must(w2.act(func(ctx context.Context) (any, error) { return e2.CancelOrder(ctx, sid2, "all") })).(*CancelOrderResult)
	if c.ReturnedCredits == nil || *c.ReturnedCredits != 24 {
		t.Fatalf("cancel all = %+v, want 2×12 credits back", c)
	}
	after := w2.must(e2.Status(sid2)).(*StatusResult).Player.Credits
	if after != before+iron.Rewards.Credits+24 {
		t.Fatalf("credits %d → %d, want the reward %d and the escrow 24", before, after, iron.Rewards.Credits)
	}
	cargo := w2.must(e2.Cargo(sid2)).(*CargoResult)
	if cargo.Used != 30-iron.Objectives[0].Quantity {
		t.Fatalf("cargo used %d, want 30 less the %d delivered (the 5 listed came back)", cargo.Used, iron.Objectives[0].Quantity)
	}
}

// sell and buy take an item's name as well as its id, and jettison dumps what the hold has.
func TestTradesTakeItemNames(t *testing.T) {
	w := newWorldT(t, Config{MutationsPerMinute: -1, ReadsPerMinute: -1})
	reg := w.register("namer")
	sid := reg.SessionID
	p := w.e.byID[reg.PlayerID]
	p.mu.Lock()
	p.cargo["nickel_ore"] = 4
	p.mu.Unlock()
	sold := w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Sell(ctx, sid, "Nickel Ore", 2) })).(*SellResult)
	if sold.ItemID != "nickel_ore" || sold.QuantitySold != 2 {
		t.Fatalf("sell by name = %+v", sold)
	}
	bought := w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Buy(ctx, sid, "iron ore", 1) })).(*BuyResult)
	if bought.ItemID != "iron_ore" {
		t.Fatalf("buy by name = %+v", bought)
	}
	j := w.must(w.act(func(ctx context.Context) (any, error) { return w.e.Jettison(ctx, sid, "nickel_ore", 10) })).(*JettisonResult)
	if j.Quantity != 2 || j.CargoUsed != 1 {
		t.Fatalf("jettison = %+v, want the 2 left, 1 iron aboard", j)
	}
}
