// Package grantstore stores the grants a sync discovers: entitlements granted to principals,
// written in bulk, packed into a single file, and read back page by page.
package grantstore

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"grantstore/grantspb"
)

// Engine is a grant store. A sync is written between StartSync and EndSync; after EndSync its
// grants are durable and can be listed in pages.
type Engine interface {
	// StartSync begins a sync and returns its id.
	StartSync(ctx context.Context) (string, error)
	// PutGrants writes a batch of grants into the running sync; a grant whose external id
	// was written before replaces the earlier one, index entries included.
	PutGrants(ctx context.Context, grants []*grantspb.GrantRecord) error
	// EndSync makes the running sync durable.
	EndSync(ctx context.Context) error
	// ListGrants returns up to pageSize grants of a sync in external id order, and the token
	// of the next page ("" after the last page).
	ListGrants(ctx context.Context, syncID string, pageSize int, pageToken string) (
		[]*grantspb.GrantRecord, string, error)
	// Close releases the engine; it does not end a running sync.
	Close() error
}

// ErrNoSync is returned when grants are written outside a sync.
var ErrNoSync = errors.New("grantstore: no sync running")

// Page tokens carry the last external id returned, so that a page resumes right after it.
func encodePageToken(lastExternalID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(lastExternalID))
}

func decodePageToken(token string) (string, error) {
	if token == "" {
		return "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", fmt.Errorf("grantstore: bad page token: %w", err)
	}
	return string(raw), nil
}

// pageStart checks a ListGrants call's arguments and returns the external id the page
// starts after ("" for the first page).
func pageStart(pageSize int, pageToken string) (string, error) {
	if pageSize <= 0 {
		return "", fmt.Errorf("grantstore: page size must be positive, got %d", pageSize)
	}
	return decodePageToken(pageToken)
}

func newSyncID(seq uint64) string {
	return fmt.Sprintf("sync-%08d", seq)
}
