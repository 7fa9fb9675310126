package grantstore

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"grantstore/grantspb"
)

// grantWriter turns one PutGrants call into batched writes: for each grant its primary key,
// and an index key by entitlement and one by principal.
type grantWriter struct {
	e *PebbleEngine

	// batch receives every key of the call.
	batch *pebble.Batch

	// inBatch holds the grants written earlier in this call: the batch cannot be read back.
	inBatch map[string]*grantspb.GrantRecord
}

func (e *PebbleEngine) newGrantWriter(n int) *grantWriter {
	return &grantWriter{
		e:       e,
		batch:   e.newBatch(n),
		inBatch: make(map[string]*grantspb.GrantRecord),
	}
}

// newBatch makes a write batch for n grants.
func (e *PebbleEngine) newBatch(n int) *pebble.Batch {
	return e.db.NewBatch()
}

func (w *grantWriter) put(g *grantspb.GrantRecord) error {
	prev, err := w.previous(g)
	if err != nil {
		return err
	}
	if prev != nil {
		if err := w.deleteIndexes(prev); err != nil {
			return err
		}
	}
	w.inBatch[g.GetExternalId()] = g

	value, err := w.marshal(g)
	if err != nil {
		return err
	}
	return w.putValue(g, value)
}

// previous is the grant stored under g's id before this write (the one earlier in the same
// call, else the committed one), or nil. Reading before writing keeps the indexes exact when a
// sync writes the same id twice.
func (w *grantWriter) previous(g *grantspb.GrantRecord) (*grantspb.GrantRecord, error) {
	if prev, ok := w.inBatch[g.GetExternalId()]; ok {
		return prev, nil
	}
	key := GrantKey(w.e.syncID, g.GetExternalId())
	old, closer, err := w.e.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	prev := &grantspb.GrantRecord{}
	if err := proto.Unmarshal(old, prev); err != nil {
		return nil, fmt.Errorf("grantstore: stored grant at %q is corrupt: %w", key, err)
	}
	return prev, nil
}

// marshal encodes a grant for its primary key's value.
func (w *grantWriter) marshal(g *grantspb.GrantRecord) ([]byte, error) {
	value, err := proto.Marshal(g)
	if err != nil {
		return nil, fmt.Errorf("grantstore: marshal grant %q: %w", g.GetExternalId(), err)
	}
	return value, nil
}

// putValue writes the grant's primary key and its index keys.
func (w *grantWriter) putValue(g *grantspb.GrantRecord, value []byte) error {
	if err := w.batch.Set(GrantKey(w.e.syncID, g.GetExternalId()), value, nil); err != nil {
		return err
	}
	return w.setIndexes(g)
}

func (w *grantWriter) setIndexes(g *grantspb.GrantRecord) error {
	if err := w.batch.Set(w.entitlementKey(g), nil, nil); err != nil {
		return err
	}
	return w.batch.Set(w.principalKey(g), nil, nil)
}

func (w *grantWriter) deleteIndexes(prev *grantspb.GrantRecord) error {
	if err := w.batch.Delete(w.entitlementKey(prev), nil); err != nil {
		return err
	}
	return w.batch.Delete(w.principalKey(prev), nil)
}

func (w *grantWriter) commit() error {
	return w.batch.Commit(pebble.NoSync)
}

func (w *grantWriter) close() {
	w.batch.Close()
}

func (w *grantWriter) entitlementKey(g *grantspb.GrantRecord) []byte {
	return ByEntitlementKey(w.e.syncID, g.GetEntitlement().GetEntitlementId(),
		g.GetPrincipal().GetResourceTypeId(), g.GetPrincipal().GetResourceId(), g.GetExternalId())
}

func (w *grantWriter) principalKey(g *grantspb.GrantRecord) []byte {
	return ByPrincipalKey(w.e.syncID, g.GetPrincipal().GetResourceTypeId(),
		g.GetPrincipal().GetResourceId(), g.GetExternalId())
}
