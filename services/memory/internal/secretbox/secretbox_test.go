package secretbox_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/services/memory/internal/secretbox"
)

func TestParseKey(t *testing.T) {
	raw := bytes.Repeat([]byte{0xab}, 32)
	for _, s := range []string{hex.EncodeToString(raw), base64.StdEncoding.EncodeToString(raw), base64.RawURLEncoding.EncodeToString(raw), " " + hex.EncodeToString(raw) + "\n"} {
		k, err := secretbox.ParseKey(s)
		if err != nil || !bytes.Equal(k, raw) {
			t.Errorf("ParseKey(%q) = %x, %v", s, k, err)
		}
	}
	for _, s := range []string{"", "short", hex.EncodeToString(raw[:16]), base64.StdEncoding.EncodeToString(raw[:31])} {
		_, err := secretbox.ParseKey(s)
		if err == nil {
			t.Errorf("ParseKey(%q) accepted", s)
		} else if s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("error echoes the key: %v", err)
		}
	}
}

func TestSealOpen(t *testing.T) {
	box, err := secretbox.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	plain := []byte("correct horse battery staple")
	a, _ := box.Seal(plain, []byte("pilot_a"))
	b, _ := box.Seal(plain, []byte("pilot_a"))
	if bytes.Equal(a, b) {
		t.Fatal("same ciphertext twice: nonce not random")
	}
	if bytes.Contains(a, plain) {
		t.Fatal("plaintext visible")
	}
	got, err := box.Open(a, []byte("pilot_a"))
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open: %q %v", got, err)
	}
	if _, err := box.Open(a, []byte("pilot_b")); err == nil {
		t.Fatal("opened with the wrong associated data")
	}
	a[len(a)-1] ^= 1
	if _, err := box.Open(a, []byte("pilot_a")); err == nil {
		t.Fatal("tampered ciphertext opened")
	}
	other, _ := secretbox.New(bytes.Repeat([]byte{8}, 32))
	if _, err := other.Open(b, []byte("pilot_a")); err == nil {
		t.Fatal("opened with another key")
	}
	if _, err := box.Open([]byte{1, 2}, nil); err == nil {
		t.Fatal("short input opened")
	}
}
