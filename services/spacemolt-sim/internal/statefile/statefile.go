// Package statefile keeps the simulator's universe in a JSON file between runs. Saves are atomic (a temporary file
// in the same directory, synced, then renamed over the old one), so a crash mid-save leaves the previous state.
package statefile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
)

// Load reads the state at path; found is false when there is no file yet. A file that exists but cannot be read is
// an error: starting a fresh universe over it would lose the players.
func Load(path string) (st game.State, found bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return game.State{}, false, nil
	}
	if err != nil {
		return game.State{}, false, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return game.State{}, false, fmt.Errorf("%s is not a simulator state file: %w (move it away to start fresh)", path, err)
	}
	return st, true, nil
}

// Save writes st to path atomically, creating the directory if needed.
func Save(path string, st game.State) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
