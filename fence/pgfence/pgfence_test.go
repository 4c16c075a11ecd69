package pgfence_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fence"
	"github.com/locknode/locknode/fence/pgfence"
)

func newStore(t *testing.T, db *sql.DB, table string) *pgfence.Store {
	t.Helper()
	s, err := pgfence.New(db, pgfence.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateTable(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// One server for all cases (starting one takes seconds); each case has
// its own table.
func TestPostgres(t *testing.T) {
	db := startPostgres(t)
	t.Run("CheckAndAdvance", func(t *testing.T) { testCheckAndAdvance(t, db) })
	t.Run("RefusedWithoutQuery", func(t *testing.T) { testRefused(t, db) })
	t.Run("GuardedWritesInOrder", func(t *testing.T) { testGuardedWrites(t, db) })
	t.Run("RollbackForgets", func(t *testing.T) { testRollback(t, db) })
	t.Run("SchemaQualifiedTable", func(t *testing.T) {
		if _, err := db.Exec("CREATE SCHEMA IF NOT EXISTS app"); err != nil {
			t.Fatal(err)
		}
		s := newStore(t, db, "app.fences")
		if r, err := s.FenceCheck(context.Background(), "x", 3); err != nil || !r.OK {
			t.Fatalf("%+v %v", r, err)
		}
	})
}

func testCheckAndAdvance(t *testing.T, db *sql.DB) {
	var s fence.Checker = newStore(t, db, "seq")
	steps := []struct {
		resource string
		token    uint64
		ok       bool
		highest  uint64
	}{
		{"orders", 5, true, 5},
		{"orders", 5, true, 5}, // the holder writes again
		{"orders", 4, false, 5},
		{"orders", 0, false, 5},
		{"orders", 9, true, 9},
		{"orders", 5, false, 9},
		{"users", 1, true, 1}, // resources are independent
		{"orders", math.MaxInt64, true, math.MaxInt64},
		{"orders", 9, false, math.MaxInt64},
	}
	for i, st := range steps {
		r, err := s.FenceCheck(context.Background(), st.resource, st.token)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if r.OK != st.ok || r.Highest != st.highest {
			t.Fatalf("step %d %s/%d: %+v, want ok=%v highest=%d", i, st.resource, st.token, r, st.ok, st.highest)
		}
	}
}

func testRefused(t *testing.T, db *sql.DB) {
	s := newStore(t, db, "refused")
	ctx := context.Background()
	cases := []struct {
		name     string
		resource string
		token    uint64
		want     error
	}{
		{"token over bigint", "r", math.MaxInt64 + 1, api.ErrBadRequest},
		{"empty resource", "", 1, api.ErrBadRequest},
		{"resource too long", string(make([]byte, 100_000)), 1, api.ErrLimit},
	}
	for _, tc := range cases {
		if _, err := s.FenceCheck(ctx, tc.resource, tc.token); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM refused").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows after refusals (%v)", n, err)
	}
	for _, table := range []string{"Fences", "x; DROP TABLE y", "a.b.c", `"q"`} {
		if _, err := pgfence.New(db, pgfence.Config{Table: table}); !errors.Is(err, api.ErrBadRequest) {
			t.Errorf("table %q: %v", table, err)
		}
	}
}

// Writers with shuffled tokens race to write one resource, each checking
// its token in the write's transaction. Whatever the interleaving, the
// writes that land are in token order (never a smaller token after a
// larger one) and every refused writer wrote nothing.
func testGuardedWrites(t *testing.T, db *sql.DB) {
	s := newStore(t, db, "guard")
	ctx := context.Background()
	if _, err := db.Exec("CREATE TABLE writes (seq bigserial PRIMARY KEY, token bigint NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	const writers = 24
	tokens := rand.Perm(writers)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	refused := make(chan uint64, writers)
	for _, tok := range tokens {
		wg.Go(func() {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				errs <- err
				return
			}
			defer tx.Rollback()
			r, err := s.CheckIn(ctx, tx, "doc", uint64(tok+1))
			if err != nil {
				errs <- err
				return
			}
			if !r.OK {
				refused <- uint64(tok + 1)
				return
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO writes (token) VALUES ($1)", tok+1); err != nil {
				errs <- err
				return
			}
			errs <- tx.Commit()
		})
	}
	wg.Wait()
	close(errs)
	close(refused)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	rows, err := db.Query("SELECT token FROM writes ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var landed []int64
	for rows.Next() {
		var tok int64
		if err := rows.Scan(&tok); err != nil {
			t.Fatal(err)
		}
		if len(landed) > 0 && tok < landed[len(landed)-1] {
			t.Fatalf("write with token %d landed after %d: %v", tok, landed[len(landed)-1], landed)
		}
		landed = append(landed, tok)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(landed)+len(refused) != writers || landed[len(landed)-1] != writers {
		t.Fatalf("%d landed %v, %d refused, of %d (the largest token must land)", len(landed), landed, len(refused), writers)
	}
	t.Logf("landed in order: %v", landed)
}

func testRollback(t *testing.T, db *sql.DB) {
	s := newStore(t, db, "rollback")
	ctx := context.Background()
	if r, err := s.FenceCheck(ctx, "r", 3); err != nil || !r.OK {
		t.Fatal(r, err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := s.CheckIn(ctx, tx, "r", 10); err != nil || !r.OK {
		t.Fatal(r, err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if r, err := s.FenceCheck(ctx, "r", 4); err != nil || !r.OK || r.Highest != 4 {
		t.Fatalf("after a rolled-back 10, token 4: %+v %v", r, err)
	}
}
