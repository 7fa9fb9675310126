package grantstore

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"google.golang.org/protobuf/proto"

	"grantstore/grantspb"
)

// PebbleOptions are the Pebble settings the engine opens with; the values are in tuning.go.
func PebbleOptions() *pebble.Options {
	opts := &pebble.Options{Logger: quietLogger{}}
	opts.MemTableSize = memTableMiB << 20
	opts.MemTableStopWritesThreshold = memTableStopWrites
	opts.L0CompactionThreshold = l0CompactionThreshold
	// Writes stall at this many L0 files: Pebble's default, or more when compactions start later.
	opts.L0StopWritesThreshold = max(12, 2*l0CompactionThreshold)
	opts.CompactionConcurrencyRange = func() (lower, upper int) { return 1, maxCompactions }
	for i := range opts.Levels {
		opts.Levels[i].BlockSize = blockSizeKiB << 10
		if bloomBitsPerKey > 0 {
			opts.Levels[i].FilterPolicy = bloom.FilterPolicy(bloomBitsPerKey)
		}
	}
	return opts
}

// PebbleEngine stores grants in a Pebble LSM.
type PebbleEngine struct {
	db      *pebble.DB
	dir     string
	syncID  string
	syncSeq uint64
}

// OpenPebble opens (or creates) a Pebble grant store in dir.
func OpenPebble(dir string) (*PebbleEngine, error) {
	db, err := pebble.Open(dir, PebbleOptions())
	if err != nil {
		return nil, fmt.Errorf("grantstore: open pebble at %s: %w", dir, err)
	}
	return &PebbleEngine{db: db, dir: dir}, nil
}

// DB exposes the underlying store to the packer.
func (e *PebbleEngine) DB() *pebble.DB { return e.db }

// Dir is the directory the store lives in.
func (e *PebbleEngine) Dir() string { return e.dir }

// SyncID is the id of the running or last ended sync.
func (e *PebbleEngine) SyncID() string { return e.syncID }

func (e *PebbleEngine) StartSync(ctx context.Context) (string, error) {
	e.syncSeq++
	e.syncID = newSyncID(e.syncSeq)
	if err := e.db.Set(SyncMetaKey(e.syncID), []byte("running"), pebble.NoSync); err != nil {
		return "", err
	}
	return e.syncID, nil
}

func (e *PebbleEngine) PutGrants(ctx context.Context, grants []*grantspb.GrantRecord) error {
	if e.syncID == "" {
		return ErrNoSync
	}
	w := e.newGrantWriter(len(grants))
	defer w.close()
	for _, g := range grants {
		if err := w.put(g); err != nil {
			return err
		}
	}
	return w.commit()
}

func (e *PebbleEngine) EndSync(ctx context.Context) error {
	if e.syncID == "" {
		return ErrNoSync
	}
	if err := e.db.Set(SyncMetaKey(e.syncID), []byte("done"), pebble.NoSync); err != nil {
		return err
	}
	if err := e.db.Flush(); err != nil {
		return err
	}
	// A synced log record makes everything before it durable.
	return e.db.LogData(nil, pebble.Sync)
}

func (e *PebbleEngine) ListGrants(ctx context.Context, syncID string, pageSize int,
	pageToken string) ([]*grantspb.GrantRecord, string, error) {
	after, err := pageStart(pageSize, pageToken)
	if err != nil {
		return nil, "", err
	}
	lower, upper := grantPrefix(syncID)
	if pageToken != "" {
		// Just past the last key returned: the key itself plus a zero byte.
		lower = append(GrantKey(syncID, after), 0x00)
	}
	iter, err := e.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, "", err
	}
	defer iter.Close()
	out := make([]*grantspb.GrantRecord, 0, pageSize)
	for valid := iter.First(); valid; valid = iter.Next() {
		if len(out) == pageSize {
			return out, encodePageToken(out[len(out)-1].GetExternalId()), iter.Error()
		}
		value, err := iter.ValueAndErr()
		if err != nil {
			return nil, "", err
		}
		g := &grantspb.GrantRecord{}
		if err := proto.Unmarshal(value, g); err != nil {
			return nil, "", fmt.Errorf("grantstore: corrupt grant at %q: %w", iter.Key(), err)
		}
		out = append(out, g)
	}
	return out, "", iter.Error()
}

func (e *PebbleEngine) Close() error {
	return e.db.Close()
}

// quietLogger keeps Pebble's informational chatter out of the bench output.
type quietLogger struct{}

func (quietLogger) Infof(format string, args ...interface{})  {}
func (quietLogger) Errorf(format string, args ...interface{}) {}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	panic(fmt.Sprintf(format, args...))
}
