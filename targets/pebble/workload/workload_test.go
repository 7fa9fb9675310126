package workload

import (
	"context"
	"fmt"
	"os"
	"testing"

	"google.golang.org/protobuf/proto"

	"grantstore/grantspb"
	"grantstore/grantstore"
)

func TestGrantsAreDeterministicAndUnique(t *testing.T) {
	a, b := Grants(5000, 7), Grants(5000, 7)
	seen := map[string]bool{}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			t.Fatalf("grant %d differs between two calls with the same seed", i)
		}
		seen[a[i].GetExternalId()] = true
	}
	if len(seen) != 5000 {
		t.Fatalf("%d distinct ids, want 5000", len(seen))
	}
	if a[0].GetExternalId() == "grant-000000000" && a[1].GetExternalId() == "grant-000000001" {
		t.Fatal("grants are not shuffled")
	}
}

func TestSkewedGrantsAreDeterministicAndConcentrated(t *testing.T) {
	a, b := GrantsSkewed(5000, 7), GrantsSkewed(5000, 7)
	groups := map[string]int{}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			t.Fatalf("grant %d differs between two calls with the same seed", i)
		}
		groups[a[i].GetEntitlement().GetResourceId()]++
	}
	largest := 0
	for _, n := range groups {
		largest = max(largest, n)
	}
	// Uniform keys put about 20 grants in each of 251 groups; Zipf's head holds hundreds.
	if largest < 200 {
		t.Fatalf("the largest group has %d grants: not skewed", largest)
	}
}

func TestTheDigestIsWhatWasStoredWhicheverEngine(t *testing.T) {
	ctx := context.Background()
	written := Grants(3000, 3)
	rewrites := Rewrites(written, 300)
	if len(rewrites) != 300 || rewrites[0].GetExternalId() != written[0].GetExternalId() {
		t.Fatalf("%d rewrites, the first of %q", len(rewrites), rewrites[0].GetExternalId())
	}
	sums := map[string]string{}
	for name, open := range map[string]func(string) (grantstore.Engine, error){
		"pebble": func(dir string) (grantstore.Engine, error) { return grantstore.OpenPebble(dir) },
		"sqlite": func(dir string) (grantstore.Engine, error) {
			return grantstore.OpenSQLite(dir + "/grants.sqlite")
		},
	} {
		e, err := open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		id, err := WriteSync(ctx, e, append(append([]*grantspb.GrantRecord{}, written...), rewrites...))
		if err != nil {
			t.Fatal(err)
		}
		sum, n, err := DigestSync(ctx, e, id)
		if err != nil || n != len(written) {
			t.Fatalf("%s: %d grants (%v), want %d: a rewrite replaces its grant", name, n, err, len(written))
		}
		sums[name] = sum
		e.Close()
	}
	if sums["pebble"] != sums["sqlite"] {
		t.Fatalf("the engines stored different grants: %v", sums)
	}
	unchanged, _ := digestOf(ctx, t, written)
	if unchanged == sums["pebble"] {
		t.Fatal("the rewrites changed nothing the digest sees")
	}
}

// digestOf is the digest of grants written to a fresh Pebble store.
func digestOf(ctx context.Context, t *testing.T, grants []*grantspb.GrantRecord) (string, int) {
	e, err := grantstore.OpenPebble(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	id, err := WriteSync(ctx, e, grants)
	if err != nil {
		t.Fatal(err)
	}
	sum, n, err := DigestSync(ctx, e, id)
	if err != nil {
		t.Fatal(err)
	}
	return sum, n
}

func TestScales(t *testing.T) {
	for text, n := range map[string]int{"100": 100, "1k": 1000, "10K": 10_000, "100k": 100_000, "1m": 1_000_000} {
		got, err := ParseScale(text)
		if err != nil || got != n {
			t.Errorf("ParseScale(%q) = %d, %v", text, got, err)
		}
		if back, _ := ParseScale(ScaleName(n)); back != n {
			t.Errorf("ScaleName(%d) = %q does not parse back", n, ScaleName(n))
		}
	}
	for _, bad := range []string{"", "k", "-1", "1g", "x"} {
		if _, err := ParseScale(bad); err == nil {
			t.Errorf("ParseScale(%q) accepted", bad)
		}
	}
}

func TestWritePackThenReadBack(t *testing.T) {
	ctx := context.Background()
	grants := Grants(25_000, 1)
	dir := t.TempDir()
	packed, err := WritePackPebble(ctx, dir, grants)
	if err != nil {
		t.Fatal(err)
	}
	n, err := UnpackReadGrants(ctx, packed, t.TempDir())
	if err != nil || n != len(grants) {
		t.Fatalf("read back %d grants (%v), wrote %d", n, err, len(grants))
	}
	path, err := WriteSQLite(ctx, t.TempDir(), grants[:3000])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkWritePack(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		grants := Grants(n, 1)
		b.Run(ScaleName(n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := WritePackPebble(context.Background(), b.TempDir(), grants); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkUnpackReadGrants(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		packed, err := WritePackPebble(context.Background(), b.TempDir(), Grants(n, 1))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(ScaleName(n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				got, err := UnpackReadGrants(context.Background(), packed, b.TempDir())
				if err != nil || got != n {
					b.Fatal(fmt.Sprint(got, err))
				}
			}
		})
	}
}
