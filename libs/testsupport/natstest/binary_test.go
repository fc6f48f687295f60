package natstest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ZOEA_TEST_NATS_SERVER_BIN must name an absolute path to a binary of the pinned version: anything else is refused
// with a sentence naming the variable, never run in its place.
func TestBinaryEnvIsChecked(t *testing.T) {
	old := filepath.Join(t.TempDir(), "nats-server")
	if err := os.WriteFile(old, []byte("#!/bin/sh\necho 'nats-server: v2.9.10'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ bin, want string }{
		{"nats-server", "absolute path"},
		{old, "is nats-server: v2.9.10, the tests pin " + Version},
		{filepath.Join(t.TempDir(), "none"), BinaryEnv},
	} {
		t.Setenv(BinaryEnv, tc.bin)
		if _, err := findBinary(); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), BinaryEnv) {
			t.Errorf("%s=%s: %v, want an error saying %q", BinaryEnv, tc.bin, err, tc.want)
		}
	}
}
