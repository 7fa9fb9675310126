package grantstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"grantstore/grantspb"
)

func grant(id, group, user string) *grantspb.GrantRecord {
	return &grantspb.GrantRecord{
		ExternalId:   id,
		Entitlement:  &grantspb.EntitlementRef{ResourceTypeId: "group", ResourceId: group, EntitlementId: group + ":member"},
		Principal:    &grantspb.PrincipalRef{ResourceTypeId: "user", ResourceId: user},
		DiscoveredAt: timestamppb.New(timestamppb.Now().AsTime().Truncate(1e9)),
	}
}

func manyGrants(n int) []*grantspb.GrantRecord {
	out := make([]*grantspb.GrantRecord, n)
	for i := range out {
		// Written in an order unlike the id order, as a connector would.
		j := (i * 7919) % n
		out[i] = grant(fmt.Sprintf("g%05d", j), fmt.Sprintf("grp%d", j%13), fmt.Sprintf("u%d", j%101))
	}
	return out
}

type opener func(t *testing.T) Engine

func engines() map[string]opener {
	return map[string]opener{
		"pebble": func(t *testing.T) Engine {
			e, err := OpenPebble(filepath.Join(t.TempDir(), "db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			return e
		},
		"sqlite": func(t *testing.T) Engine {
			e, err := OpenSQLite(filepath.Join(t.TempDir(), "g.sqlite"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			return e
		},
	}
}

func writeSync(t *testing.T, e Engine, batches ...[]*grantspb.GrantRecord) string {
	t.Helper()
	ctx := context.Background()
	id, err := e.StartSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		if err := e.PutGrants(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.EndSync(ctx); err != nil {
		t.Fatal(err)
	}
	return id
}

// listAll pages through a sync and returns the grants and the size of every page.
func listAll(t *testing.T, e Engine, syncID string, pageSize int) ([]*grantspb.GrantRecord, []int) {
	t.Helper()
	var out []*grantspb.GrantRecord
	var pages []int
	token := ""
	for {
		page, next, err := e.ListGrants(context.Background(), syncID, pageSize, token)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		pages = append(pages, len(page))
		if next == "" {
			return out, pages
		}
		token = next
	}
}

func TestPutOutsideSyncFails(t *testing.T) {
	for name, open := range engines() {
		t.Run(name, func(t *testing.T) {
			err := open(t).PutGrants(context.Background(), manyGrants(1))
			if !errors.Is(err, ErrNoSync) {
				t.Fatalf("got %v, want ErrNoSync", err)
			}
		})
	}
}

func TestBadPageArguments(t *testing.T) {
	for name, open := range engines() {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			id := writeSync(t, e, manyGrants(3))
			if _, _, err := e.ListGrants(context.Background(), id, 0, ""); err == nil {
				t.Error("page size 0 accepted")
			}
			if _, _, err := e.ListGrants(context.Background(), id, 10, "%%%"); err == nil {
				t.Error("garbage page token accepted")
			}
		})
	}
}

// Pebble and SQLite must return the same grants, in the same order, on the same pages.
func TestEnginesAgree(t *testing.T) {
	base := manyGrants(1000)
	rewrites := []*grantspb.GrantRecord{
		grant("g00010", "moved", "u-new"), // rewrite of an earlier batch's grant
		grant("g99999", "grp1", "u1"),     // new
		grant("g00010", "moved-again", "u-newer"),
	}
	for _, pageSize := range []int{1, 7, 999, 1000, 1001, 10_000} {
		t.Run(fmt.Sprint(pageSize), func(t *testing.T) {
			var results [][]*grantspb.GrantRecord
			var pageSizes [][]int
			for _, name := range []string{"pebble", "sqlite"} {
				e := engines()[name](t)
				id := writeSync(t, e, base[:600], base[600:], rewrites)
				got, pages := listAll(t, e, id, pageSize)
				results = append(results, got)
				pageSizes = append(pageSizes, pages)
			}
			if len(results[0]) != 1001 {
				t.Fatalf("pebble listed %d grants, want 1001", len(results[0]))
			}
			if len(results[0]) != len(results[1]) {
				t.Fatalf("pebble %d grants, sqlite %d", len(results[0]), len(results[1]))
			}
			for i := range results[0] {
				if !proto.Equal(results[0][i], results[1][i]) {
					t.Fatalf("grant %d differs: pebble %v, sqlite %v", i, results[0][i], results[1][i])
				}
			}
			if fmt.Sprint(pageSizes[0]) != fmt.Sprint(pageSizes[1]) {
				t.Fatalf("pages differ: pebble %v, sqlite %v", pageSizes[0], pageSizes[1])
			}
			for _, g := range results[0] {
				if g.GetExternalId() == "g00010" && g.GetPrincipal().GetResourceId() != "u-newer" {
					t.Fatalf("rewrite lost: %v", g)
				}
			}
		})
	}
}

func TestPebbleIndexesFollowRewrites(t *testing.T) {
	e := engines()["pebble"](t).(*PebbleEngine)
	first := []*grantspb.GrantRecord{grant("a", "g1", "u1"), grant("b", "g1", "u2")}
	// Rewritten twice within one batch and once more in a later batch.
	second := []*grantspb.GrantRecord{grant("a", "g2", "u3"), grant("a", "g3", "u4")}
	third := []*grantspb.GrantRecord{grant("b", "g4", "u5")}
	id := writeSync(t, e, first, second, third)
	want := map[string]bool{
		string(ByEntitlementKey(id, "g3:member", "user", "u4", "a")): true,
		string(ByEntitlementKey(id, "g4:member", "user", "u5", "b")): true,
		string(ByPrincipalKey(id, "user", "u4", "a")):                true,
		string(ByPrincipalKey(id, "user", "u5", "b")):                true,
	}
	got := map[string]bool{}
	iter, err := e.DB().NewIter(&pebble.IterOptions{
		LowerBound: []byte{tagByEntitlement}, UpperBound: []byte{tagByPrincipal + 1}})
	if err != nil {
		t.Fatal(err)
	}
	for valid := iter.First(); valid; valid = iter.Next() {
		got[string(iter.Key())] = true
	}
	iter.Close()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("index keys:\n got  %q\n want %q", keys(got), keys(want))
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestSyncsAreSeparate(t *testing.T) {
	for name, open := range engines() {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			first := writeSync(t, e, manyGrants(10))
			second := writeSync(t, e, manyGrants(3))
			a, _ := listAll(t, e, first, 100)
			b, _ := listAll(t, e, second, 100)
			if len(a) != 10 || len(b) != 3 {
				t.Fatalf("sync sizes %d and %d, want 10 and 3", len(a), len(b))
			}
		})
	}
}

func TestPebbleSurvivesReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	e, err := OpenPebble(dir)
	if err != nil {
		t.Fatal(err)
	}
	id := writeSync(t, e, manyGrants(500))
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = OpenPebble(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	got, _ := listAll(t, e, id, 64)
	if len(got) != 500 {
		t.Fatalf("after reopen: %d grants, want 500", len(got))
	}
}
