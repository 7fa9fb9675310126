package grantstore

import (
	"context"
	"database/sql"
	"fmt"

	"google.golang.org/protobuf/proto"
	_ "modernc.org/sqlite" // pure Go: CGO stays off

	"grantstore/grantspb"
)

const sqliteSchema = `
CREATE TABLE IF NOT EXISTS grants (
	sync_id TEXT NOT NULL,
	external_id TEXT NOT NULL,
	entitlement_id TEXT NOT NULL,
	principal_type TEXT NOT NULL,
	principal_id TEXT NOT NULL,
	data BLOB NOT NULL,
	PRIMARY KEY (sync_id, external_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS by_entitlement
	ON grants (sync_id, entitlement_id, principal_type, principal_id, external_id);
CREATE INDEX IF NOT EXISTS by_principal
	ON grants (sync_id, principal_type, principal_id, external_id);
CREATE TABLE IF NOT EXISTS syncs (sync_id TEXT PRIMARY KEY, state TEXT NOT NULL);
`

// SQLiteEngine stores grants in SQLite: the comparison engine and the regression sentinel.
type SQLiteEngine struct {
	db      *sql.DB
	syncID  string
	syncSeq uint64
}

// OpenSQLite opens (or creates) a SQLite grant store at path.
func OpenSQLite(path string) (*SQLiteEngine, error) {
	db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, fmt.Errorf("grantstore: open sqlite at %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(sqliteSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("grantstore: sqlite schema: %w", err)
	}
	return &SQLiteEngine{db: db}, nil
}

func (e *SQLiteEngine) StartSync(ctx context.Context) (string, error) {
	e.syncSeq++
	e.syncID = newSyncID(e.syncSeq)
	_, err := e.db.ExecContext(ctx,
		`INSERT OR REPLACE INTO syncs (sync_id, state) VALUES (?, 'running')`, e.syncID)
	return e.syncID, err
}

func (e *SQLiteEngine) PutGrants(ctx context.Context, grants []*grantspb.GrantRecord) error {
	if e.syncID == "" {
		return ErrNoSync
	}
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO grants
		(sync_id, external_id, entitlement_id, principal_type, principal_id, data)
		VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, g := range grants {
		data, err := proto.Marshal(g)
		if err != nil {
			return fmt.Errorf("grantstore: marshal grant %q: %w", g.GetExternalId(), err)
		}
		if _, err := stmt.ExecContext(ctx, e.syncID, g.GetExternalId(),
			g.GetEntitlement().GetEntitlementId(), g.GetPrincipal().GetResourceTypeId(),
			g.GetPrincipal().GetResourceId(), data); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func (e *SQLiteEngine) EndSync(ctx context.Context) error {
	if e.syncID == "" {
		return ErrNoSync
	}
	if _, err := e.db.ExecContext(ctx,
		`UPDATE syncs SET state = 'done' WHERE sync_id = ?`, e.syncID); err != nil {
		return err
	}
	_, err := e.db.ExecContext(ctx, `PRAGMA wal_checkpoint(FULL)`)
	return err
}

func (e *SQLiteEngine) ListGrants(ctx context.Context, syncID string, pageSize int,
	pageToken string) ([]*grantspb.GrantRecord, string, error) {
	after, err := pageStart(pageSize, pageToken)
	if err != nil {
		return nil, "", err
	}
	// One row more than the page tells whether another page follows.
	rows, err := e.db.QueryContext(ctx, `SELECT data FROM grants
		WHERE sync_id = ? AND external_id > ? ORDER BY external_id LIMIT ?`,
		syncID, after, pageSize+1)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	out := make([]*grantspb.GrantRecord, 0, pageSize)
	more := false
	for rows.Next() {
		if len(out) == pageSize {
			more = true
			break
		}
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return nil, "", err
		}
		g := &grantspb.GrantRecord{}
		if err := proto.Unmarshal(data, g); err != nil {
			return nil, "", fmt.Errorf("grantstore: corrupt sqlite grant: %w", err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	if more {
		return out, encodePageToken(out[len(out)-1].GetExternalId()), nil
	}
	return out, "", nil
}

func (e *SQLiteEngine) Close() error {
	return e.db.Close()
}
