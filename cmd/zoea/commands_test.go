package main

import (
	"strings"
	"testing"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
)

func TestConfirmNeedsAYes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		fail bool
	}{{"y\n", true, false}, {"YES\n", true, false}, {"n\n", false, false}, {"\n", false, false}, {"", false, true}} {
		var out strings.Builder
		ok, err := confirm(strings.NewReader(tc.in), &out, "Delete? [y/N] ")
		if ok != tc.ok || (err != nil) != tc.fail {
			t.Errorf("answer %q: ok %v err %v", tc.in, ok, err)
		}
		if !strings.HasPrefix(out.String(), "Delete? [y/N] ") {
			t.Errorf("question not asked: %q", out.String())
		}
	}
}

func TestShowPrintsWhereTheMysisIsAndWhatItCarries(t *testing.T) {
	s := &runnerv1.MysisStatus{Mysis: &memoryv1.Mysis{Name: "scout-1"}, Credits: 1250,
		Usage: &memoryv1.UsageTotals{CostNanos: 500_000_000},
		Ship: &runnerv1.ShipView{System: "sol", Poi: "sol_central", DockedAt: "sol_central", Class: "starter_miner", Hull: 100,
			MaxHull: 100, Fuel: 12, MaxFuel: 50, CargoUsed: 7, CargoCapacity: 50, CreditsEarned: 4200,
			Cargo: []*runnerv1.CargoItem{{ItemId: "ore_iron", Quantity: 7}}}}
	var out strings.Builder
	printStatus(&out, s)
	for _, want := range []string{"where:         docked at sol_central (sol)", "ship:          starter_miner, hull 100/100, shield 0/0, fuel 12/50",
		"cargo:         7/50: ore_iron × 7", "earned:        4,200 credits, 8,400 per $"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	s.Ship = nil
	printStatus(&out, s)
	if strings.Contains(out.String(), "where:") {
		t.Errorf("show invents a location the game never reported:\n%s", out.String())
	}
}
