// Package workload is the bench harness's side of the target: the grants a sync writes and the
// two operations measured. It is protected from hypothesis patches, so a patch cannot make the
// work smaller; it can only make the engine faster.
package workload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"grantstore/grantspb"
	"grantstore/grantstore"
)

// PageSize is the page size of the paginated read.
const PageSize = 10_000

// BatchSize is how many grants one PutGrants call carries, as a connector's page would.
const BatchSize = 10_000

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Grants returns n grants, the same for the same (n, seed), in the shuffled order a connector
// would discover them. About 1 in 10 carries an annotation.
func Grants(n int, seed uint64) []*grantspb.GrantRecord {
	return grants(n, seed, func(rng *rand.Rand, max int) int { return rng.IntN(max) })
}

// GrantsSkewed is Grants with another key distribution: groups and users drawn from a Zipf
// law (a few very large groups and very active users, a long tail), and external ids spaced
// apart. The holdout workload runs it, so that a change tuned to the bench's uniform keys
// does not pass for one that helps every sync.
func GrantsSkewed(n int, seed uint64) []*grantspb.GrantRecord {
	zipfs := map[int]*rand.Zipf{}
	return grants(n, seed, func(rng *rand.Rand, max int) int {
		z, ok := zipfs[max]
		if !ok {
			z = rand.NewZipf(rng, 1.2, 1, uint64(max-1))
			zipfs[max] = z
		}
		return int(z.Uint64())
	})
}

func grants(n int, seed uint64, pick func(rng *rand.Rand, max int) int) []*grantspb.GrantRecord {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	groups := n/20 + 1
	users := n/4 + 1
	out := make([]*grantspb.GrantRecord, n)
	for i := range out {
		g := &grantspb.GrantRecord{
			ExternalId: fmt.Sprintf("grant-%09d", i),
			Entitlement: &grantspb.EntitlementRef{
				ResourceTypeId: "group",
				ResourceId:     fmt.Sprintf("group-%06d", pick(rng, groups)),
				EntitlementId:  "member",
			},
			Principal: &grantspb.PrincipalRef{
				ResourceTypeId: "user",
				ResourceId:     fmt.Sprintf("user-%07d", pick(rng, users)),
			},
			DiscoveredAt: timestamppb.New(epoch.Add(time.Duration(i) * time.Millisecond)),
		}
		g.Entitlement.EntitlementId = "group:" + g.Entitlement.ResourceId + ":member"
		if rng.IntN(10) == 0 {
			g.Annotations = []*anypb.Any{{
				TypeUrl: "type.googleapis.com/c1.connector.v2.GrantExpandable",
				Value:   []byte(fmt.Sprintf("expand:%s", g.Entitlement.ResourceId)),
			}}
		}
		out[i] = g
	}
	rng.Shuffle(n, func(a, b int) { out[a], out[b] = out[b], out[a] })
	return out
}

// ParseScale reads "100", "1k", "10k", "100k", "1m".
func ParseScale(s string) (int, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	mult := 1
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1_000, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "m"):
		mult, s = 1_000_000, strings.TrimSuffix(s, "m")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad scale %q (want 100, 1k, 10k, 100k, 1m)", s)
	}
	return n * mult, nil
}

// ScaleName is the inverse of ParseScale: 100000 -> "100k".
func ScaleName(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dm", n/1_000_000)
	case n >= 1_000 && n%1_000 == 0:
		return fmt.Sprintf("%dk", n/1_000)
	}
	return strconv.Itoa(n)
}

// WritePackPebble opens a store in dir, writes the grants as one sync, packs it to
// dir/grants.pack, and closes the store. It returns the packed file's path.
func WritePackPebble(ctx context.Context, dir string, grants []*grantspb.GrantRecord) (string, error) {
	e, err := grantstore.OpenPebble(filepath.Join(dir, "db"))
	if err != nil {
		return "", err
	}
	packed := filepath.Join(dir, "grants.pack")
	if err := writeSync(ctx, e, grants); err != nil {
		e.Close()
		return "", err
	}
	if err := grantstore.Pack(e, packed); err != nil {
		e.Close()
		return "", err
	}
	return packed, e.Close()
}

// WriteSQLite writes the grants as one sync into a SQLite store in dir and closes it.
func WriteSQLite(ctx context.Context, dir string, grants []*grantspb.GrantRecord) (string, error) {
	path := filepath.Join(dir, "grants.sqlite")
	e, err := grantstore.OpenSQLite(path)
	if err != nil {
		return "", err
	}
	if err := writeSync(ctx, e, grants); err != nil {
		e.Close()
		return "", err
	}
	return path, e.Close()
}

func writeSync(ctx context.Context, e grantstore.Engine, grants []*grantspb.GrantRecord) error {
	_, err := WriteSync(ctx, e, grants)
	return err
}

// WriteSync writes the grants as one sync, in batches of BatchSize, and returns its id.
func WriteSync(ctx context.Context, e grantstore.Engine, grants []*grantspb.GrantRecord) (string, error) {
	id, err := e.StartSync(ctx)
	if err != nil {
		return "", err
	}
	for start := 0; start < len(grants); start += BatchSize {
		end := min(start+BatchSize, len(grants))
		if err := e.PutGrants(ctx, grants[start:end]); err != nil {
			return "", err
		}
	}
	return id, e.EndSync(ctx)
}

// UnpackReadGrants opens a packed file in workDir and reads every grant of its sync in pages.
// It returns how many grants it read.
func UnpackReadGrants(ctx context.Context, packed, workDir string) (int, error) {
	e, m, err := grantstore.OpenPacked(packed, workDir)
	if err != nil {
		return 0, err
	}
	defer e.Close()
	return CountAll(ctx, e, m.SyncID)
}

// CountAll pages through a sync and counts its grants, checking that ids ascend strictly.
func CountAll(ctx context.Context, e grantstore.Engine, syncID string) (int, error) {
	count, token, last := 0, "", ""
	for {
		page, next, err := e.ListGrants(ctx, syncID, PageSize, token)
		if err != nil {
			return count, err
		}
		for _, g := range page {
			if count > 0 && g.GetExternalId() <= last {
				return count, fmt.Errorf("grants out of order: %q after %q", g.GetExternalId(), last)
			}
			last = g.GetExternalId()
			count++
		}
		if next == "" {
			return count, nil
		}
		token = next
	}
}

// Rewrites returns k of the grants again (every len/k-th), each with another principal: written
// after them in the same sync, each replaces the earlier record, index entries included.
func Rewrites(grants []*grantspb.GrantRecord, k int) []*grantspb.GrantRecord {
	if k <= 0 || len(grants) == 0 {
		return nil
	}
	step := max(1, len(grants)/k)
	var out []*grantspb.GrantRecord
	for i := 0; i < len(grants) && len(out) < k; i += step {
		g := proto.Clone(grants[i]).(*grantspb.GrantRecord)
		g.Principal.ResourceId += "-moved"
		out = append(out, g)
	}
	return out
}

// DigestSync returns the SHA-256 of every grant of a sync listed back, in order, each
// marshaled deterministically, and how many there were: what the engine stored, whatever
// way it stored it.
func DigestSync(ctx context.Context, e grantstore.Engine, syncID string) (string, int, error) {
	sum := sha256.New()
	count, token := 0, ""
	marshal := proto.MarshalOptions{Deterministic: true}
	for {
		page, next, err := e.ListGrants(ctx, syncID, PageSize, token)
		if err != nil {
			return "", count, err
		}
		for _, g := range page {
			b, err := marshal.Marshal(g)
			if err != nil {
				return "", count, err
			}
			fmt.Fprintf(sum, "%d:", len(b))
			sum.Write(b)
			count++
		}
		if next == "" {
			return hex.EncodeToString(sum.Sum(nil)), count, nil
		}
		token = next
	}
}
