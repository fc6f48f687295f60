package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// errNoKey is returned by every call that must encrypt or decrypt a password when no key is configured.
func errNoKey() error {
	return &errs.Error{Kind: errs.Conflict, Reason: errs.ReasonSecretKeyMissing,
		Msg: "ZOEA_SECRET_KEY is not set: accounts cannot be stored or read (set a 32-byte key as hex or base64)"}
}

const accountCols = `a.username, a.password_enc, a.empire, coalesce(a.mysis_id::text, ''), a.created_at`

type accountRow struct {
	a   memory.Account
	enc []byte
}

func (r *accountRow) dest() []any {
	return []any{&r.a.Username, &r.enc, &r.a.Empire, &r.a.MysisID, &r.a.CreatedAt}
}

// open decrypts the password; the username is the associated data, so a ciphertext moved to another row fails.
func (s *Store) open(r accountRow) (memory.Account, error) {
	plain, err := s.box.Open(r.enc, []byte(r.a.Username))
	if err != nil {
		return memory.Account{}, errs.Conflictf("account %s: %v", r.a.Username, err)
	}
	a := r.a
	a.Password = string(plain)
	return a, nil
}

// CreateAccount adds a login to the pool, optionally bound to a mysis, and returns it without its password. Storing
// a username again for the mysis that holds it renews its password.
func (s *Store) CreateAccount(ctx context.Context, a memory.Account) (memory.Account, error) {
	if s.box == nil {
		return memory.Account{}, errNoKey()
	}
	enc, err := s.box.Seal([]byte(a.Password), []byte(a.Username))
	if err != nil {
		return memory.Account{}, err
	}
	// The same username for the same mysis replaces the stored password: the game forgot the account (a fresh
	// universe) and the mysis registered it again. Any other existing username is a conflict.
	var r accountRow
	err = s.pool.QueryRow(ctx, `
		INSERT INTO accounts AS a (username, password_enc, empire, mysis_id) VALUES ($1, $2, $3, $4)
		ON CONFLICT (username) DO UPDATE SET password_enc = EXCLUDED.password_enc, empire = EXCLUDED.empire
			WHERE a.mysis_id = EXCLUDED.mysis_id
		RETURNING `+accountCols, a.Username, enc, a.Empire, nullable(a.MysisID)).Scan(r.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.Account{}, &errs.Error{Kind: errs.Exists, Msg: "an account with this username already exists", Reason: errs.ReasonAccountUsernameTaken}
	}
	if err != nil {
		return memory.Account{}, dbErr(err, "create account")
	}
	return r.a, nil
}

// ClaimAccount binds a free account to the mysis and returns it with its password; a mysis that already holds one
// gets it back. The mysis row lock serialises claims for one mysis, and SKIP LOCKED lets claims for different
// myses take different accounts without waiting for each other.
func (s *Store) ClaimAccount(ctx context.Context, mysisID string) (memory.Account, error) {
	if s.box == nil {
		return memory.Account{}, errNoKey()
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return memory.Account{}, dbErr(err, "claim account")
	}
	defer rollback(ctx, tx)
	var one int
	err = tx.QueryRow(ctx, `SELECT 1 FROM myses WHERE id = $1 FOR NO KEY UPDATE`, mysisID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.Account{}, errMysisNotFound(mysisID)
	}
	if err != nil {
		return memory.Account{}, dbErr(err, "claim account")
	}
	var r accountRow
	err = tx.QueryRow(ctx, `SELECT `+accountCols+` FROM accounts a WHERE a.mysis_id = $1`, mysisID).Scan(r.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		err = tx.QueryRow(ctx, `
			UPDATE accounts a SET mysis_id = $1
			WHERE a.username = (
				SELECT username FROM accounts WHERE mysis_id IS NULL
				ORDER BY created_at, username LIMIT 1 FOR UPDATE SKIP LOCKED)
			RETURNING `+accountCols, mysisID).Scan(r.dest()...)
		if errors.Is(err, pgx.ErrNoRows) {
			return memory.Account{}, errs.NotFoundf("no free account in the pool")
		}
	}
	if err != nil {
		return memory.Account{}, dbErr(err, "claim account")
	}
	a, err := s.open(r)
	if err != nil {
		return memory.Account{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return memory.Account{}, dbErr(err, "claim account")
	}
	return a, nil
}

// GetAccountForMysis returns the account bound to the mysis, with its password.
func (s *Store) GetAccountForMysis(ctx context.Context, mysisID string) (memory.Account, error) {
	if s.box == nil {
		return memory.Account{}, errNoKey()
	}
	var r accountRow
	err := s.pool.QueryRow(ctx, `SELECT `+accountCols+` FROM accounts a WHERE a.mysis_id = $1`, mysisID).Scan(r.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		if err := s.mustExist(ctx, mysisID); err != nil {
			return memory.Account{}, err
		}
		return memory.Account{}, errs.NotFoundf("mysis %s holds no account", mysisID)
	}
	if err != nil {
		return memory.Account{}, dbErr(err, "get account")
	}
	return s.open(r)
}

// ReleaseAccount unbinds the mysis's account and returns its username ("" when it held none).
func (s *Store) ReleaseAccount(ctx context.Context, mysisID string) (string, error) {
	var exists bool
	var username *string
	err := s.pool.QueryRow(ctx, `
		WITH u AS (UPDATE accounts SET mysis_id = NULL WHERE mysis_id = $1 RETURNING username)
		SELECT EXISTS (SELECT 1 FROM myses WHERE id = $1), (SELECT username FROM u)`, mysisID).Scan(&exists, &username)
	if err != nil {
		return "", dbErr(err, "release account")
	}
	if !exists {
		return "", errMysisNotFound(mysisID)
	}
	return deref(username), nil
}
