package statefile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/statefile"
)

func TestSaveLoadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "sim-state.json")
	if _, found, err := statefile.Load(path); err != nil || found {
		t.Fatalf("missing file: found=%v err=%v, want a clean start", found, err)
	}
	e := game.New(game.Config{Seed: 3})
	if _, err := e.Register("pilot-1", "solarian", ""); err != nil {
		t.Fatal(err)
	}
	st, err := e.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second save replaces the first
		if err := statefile.Save(path, st); err != nil {
			t.Fatal(err)
		}
	}
	got, found, err := statefile.Load(path)
	if err != nil || !found {
		t.Fatalf("load: found=%v err=%v", found, err)
	}
	if len(got.Players) != 1 || got.Players[0].Username != "pilot-1" || got.Seed != 3 {
		t.Fatalf("round trip lost the player: %+v", got)
	}
	if _, err := game.Restore(game.Config{Seed: 3}, got); err != nil {
		t.Fatalf("restore the loaded state: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestLoadRefusesGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sim-state.json")
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := statefile.Load(path); err == nil || !strings.Contains(err.Error(), "move it away") {
		t.Fatalf("a corrupt file must stop the start with advice, got %v", err)
	}
}
