// Package pgfence keeps a resource's fence in PostgreSQL, next to the data
// it protects: a writer's fencing token is checked and recorded by one
// statement, inside the transaction of the write it guards, so a
// superseded lock holder's write is refused by the database itself, however
// late it arrives.
//
// It uses database/sql and any PostgreSQL driver; github.com/jackc/pgx/v5
// (its stdlib package, driver name "pgx") is the one it is tested with:
//
//	db, _ := sql.Open("pgx", "postgres://app@db/app")
//	fences, _ := pgfence.New(db, pgfence.Config{})
//	_ = fences.CreateTable(ctx)
//	tx, _ := db.BeginTx(ctx, nil)
//	r, err := fences.CheckIn(ctx, tx, "orders", lock.Fence())
//	if err != nil || !r.OK {
//		tx.Rollback() // superseded: another holder has written since
//		...
//	}
//	tx.ExecContext(ctx, "UPDATE orders SET ...")
//	tx.Commit()
//
// Between CheckIn and the end of the transaction the fence row stays
// locked: a concurrent writer of the same resource waits, then sees the
// larger token and is refused. A *Store is a fence.Checker (FenceCheck, in
// its own transaction), so it can also sit behind fence.Middleware, and
// behind fence.WithRegistry so the cluster refuses tokens it never issued
// before the database records them.
package pgfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"regexp"

	"github.com/locknode/locknode/api"
)

// DefaultTable is the table of Config{}.
const DefaultTable = "locknode_fences"

// Config configures a Store.
type Config struct {
	// Table holds one row per resource (resource text primary key, token
	// bigint). An unquoted PostgreSQL identifier, optionally
	// schema-qualified ("app.fences"). Default DefaultTable.
	Table string
	// Limits bound resource names, as the cluster bounds them. Default
	// api.DefaultLimits().
	Limits *api.Limits
}

var identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}(\.[a-z_][a-z0-9_]{0,62})?$`)

// Validate checks cfg. The table name is spliced into SQL, so it must be a
// plain identifier.
func (cfg Config) Validate() error {
	if cfg.Table != "" && !identRE.MatchString(cfg.Table) {
		return fmt.Errorf("%w: pgfence: table %q is not a lower-case identifier", api.ErrBadRequest, cfg.Table)
	}
	return nil
}

// Querier runs one statement: a *sql.DB, *sql.Tx or *sql.Conn.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Store checks and records fences in one PostgreSQL table.
type Store struct {
	db     *sql.DB
	limits api.Limits
	create string
	check  string
}

// New returns a Store on db. It does not touch the database; see
// CreateTable.
func New(db *sql.DB, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if db == nil {
		return nil, fmt.Errorf("%w: pgfence: nil db", api.ErrBadRequest)
	}
	table := cfg.Table
	if table == "" {
		table = DefaultTable
	}
	limits := api.DefaultLimits()
	if cfg.Limits != nil {
		limits = *cfg.Limits
	}
	return &Store{
		db: db, limits: limits,
		create: `CREATE TABLE IF NOT EXISTS ` + table + ` (
	resource text PRIMARY KEY,
	token    bigint NOT NULL CHECK (token >= 0)
)`,
		// One statement, atomic under any isolation level: the row is
		// created or locked and never lowered. GREATEST rather than
		// "DO UPDATE ... WHERE f.token <= EXCLUDED.token" so that the
		// answer always carries the highest token, also when the row
		// committed after this statement's snapshot; the price is a
		// row version written on a refusal too.
		check: `INSERT INTO ` + table + ` AS f (resource, token) VALUES ($1, $2)
ON CONFLICT (resource) DO UPDATE SET token = GREATEST(f.token, EXCLUDED.token)
RETURNING token`,
	}, nil
}

// CreateTable creates the table if it does not exist.
func (s *Store) CreateTable(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, s.create); err != nil {
		return fmt.Errorf("pgfence: create table: %w", err)
	}
	return nil
}

// FenceCheck implements fence.Checker: CheckAndAdvance in a transaction
// of its own. To guard a write, use CheckIn in the write's transaction
// instead: a check committed before the write leaves a gap in which a
// newer holder can write first.
func (s *Store) FenceCheck(ctx context.Context, resource string, token uint64) (api.FenceResult, error) {
	return s.CheckIn(ctx, s.db, resource, token)
}

// CheckIn is CheckAndAdvance through q, usually the transaction of the
// guarded write: OK iff token is at least the highest recorded for
// resource, which then becomes token. In a transaction the resource's row
// stays locked until commit or rollback, which orders concurrent writers;
// a rollback forgets the token. A token above math.MaxInt64 (no cluster
// issues one) or a bad resource name is refused with api.ErrBadRequest
// or api.ErrLimit, without a query. ctx bounds the statement.
func (s *Store) CheckIn(ctx context.Context, q Querier, resource string, token uint64) (api.FenceResult, error) {
	req := api.FenceCheckRequest{Resource: resource, Token: token}
	if err := req.Validate(s.limits); err != nil {
		return api.FenceResult{}, err
	}
	if token > math.MaxInt64 {
		return api.FenceResult{}, fmt.Errorf("%w: pgfence: token %d over the bigint range", api.ErrBadRequest, token)
	}
	var highest int64
	if err := q.QueryRowContext(ctx, s.check, resource, int64(token)).Scan(&highest); err != nil {
		if errors.Is(err, sql.ErrNoRows) { // cannot happen: the upsert always returns its row
			err = fmt.Errorf("no row returned: %w", err)
		}
		return api.FenceResult{}, fmt.Errorf("pgfence: check %s: %w", resource, err)
	}
	return api.FenceResult{OK: uint64(highest) == token, Highest: uint64(highest)}, nil
}
