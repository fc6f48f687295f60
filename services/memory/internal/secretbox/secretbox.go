// Package secretbox encrypts small secrets (SpaceMolt passwords) for storage with AES-256-GCM and a random nonce,
// so a database dump or backup never holds a usable password.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the AES-256 key length in bytes.
const KeySize = 32

// version prefixes every ciphertext so a later key rotation or algorithm change can tell formats apart.
const version byte = 1

// Box seals and opens secrets with one key.
type Box struct {
	aead cipher.AEAD
}

// ParseKey decodes a 32-byte key given as hex (64 characters) or base64 (standard or URL alphabet, padded or not).
// The error never contains the key.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) == 2*KeySize {
		if k, err := hex.DecodeString(s); err == nil {
			return k, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil && len(k) == KeySize {
			return k, nil
		}
	}
	return nil, fmt.Errorf("secret key must be %d bytes encoded as hex (%d characters) or base64", KeySize, 2*KeySize)
}

// New returns a Box for a 32-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secret key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plain; aad (e.g. the username) is authenticated but not stored, so a ciphertext copied onto
// another row fails to open.
func (b *Box) Seal(plain, aad []byte) ([]byte, error) {
	ns := b.aead.NonceSize()
	out := make([]byte, 1+ns, 1+ns+len(plain)+b.aead.Overhead())
	out[0] = version
	if _, err := rand.Read(out[1 : 1+ns]); err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	return b.aead.Seal(out, out[1:1+ns], plain, aad), nil
}

// ErrOpen means a ciphertext could not be decrypted: wrong key, wrong row, or tampering.
var ErrOpen = errors.New("secretbox: cannot decrypt (wrong ZOEA_SECRET_KEY or corrupted value)")

// Open decrypts what Seal produced with the same aad.
func (b *Box) Open(sealed, aad []byte) ([]byte, error) {
	ns := b.aead.NonceSize()
	if len(sealed) < 1+ns+b.aead.Overhead() || sealed[0] != version {
		return nil, ErrOpen
	}
	plain, err := b.aead.Open(nil, sealed[1:1+ns], sealed[1+ns:], aad)
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}
