package main

import "testing"

func TestMissionIDIsStablePerSwarm(t *testing.T) {
	a := missionID("mine ore", []string{"id-2", "id-1"})
	if a != missionID("mine ore", []string{"id-1", "id-2"}) {
		t.Fatal("the same mission to the same myses must get the same id, whatever their order")
	}
	if a == missionID("mine ore", []string{"id-1", "id-3"}) {
		t.Fatal("another swarm (another database) must get another id, or JetStream would drop its mission")
	}
	if a == missionID("sell ore", []string{"id-1", "id-2"}) {
		t.Fatal("another mission must get another id")
	}
}
