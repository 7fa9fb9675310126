package grantstore

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// compareTuples is the value order: element by element, a shorter tuple first on a tie.
func compareTuples(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := bytes.Compare([]byte(a[i]), []byte(b[i])); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

func randomTuple(rng *rand.Rand) []string {
	alphabet := []byte{0x00, 0x01, 0x02, 'a', 'b', 0xff}
	n := 1 + rng.IntN(3)
	out := make([]string, n)
	for i := range out {
		b := make([]byte, rng.IntN(4))
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
		}
		out[i] = string(b)
	}
	return out
}

func TestTupleOrderEqualsValueOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 50_000; i++ {
		a, b := randomTuple(rng), randomTuple(rng)
		if got, want := sign(bytes.Compare(AppendTuple(nil, a...), AppendTuple(nil, b...))),
			sign(compareTuples(a, b)); got != want {
			t.Fatalf("order of %q vs %q: bytes %d, values %d", a, b, got, want)
		}
	}
}

func TestTupleRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 10_000; i++ {
		tuple := randomTuple(rng)
		got, err := DecodeTuple(AppendTuple(nil, tuple...))
		if err != nil || !slices.Equal(got, tuple) {
			t.Fatalf("round trip of %q gave %q (%v)", tuple, got, err)
		}
	}
}

func TestDecodeRejectsBadEscapes(t *testing.T) {
	for _, bad := range [][]byte{{0x01}, {'a', 0x01, 0x07}} {
		if _, err := DecodeTuple(bad); err == nil {
			t.Errorf("DecodeTuple(%q) accepted a bad escape", bad)
		}
	}
}

func FuzzTupleOrder(f *testing.F) {
	f.Add("a", "b", "a\x00", "a")
	f.Add("\x01", "\x00", "", "\x02")
	f.Add("sync", "grant-1", "sync", "grant-10")
	f.Fuzz(func(t *testing.T, a1, a2, b1, b2 string) {
		a, b := []string{a1, a2}, []string{b1, b2}
		if got, want := sign(bytes.Compare(AppendTuple(nil, a...), AppendTuple(nil, b...))),
			sign(compareTuples(a, b)); got != want {
			t.Fatalf("order of %q vs %q: bytes %d, values %d", a, b, got, want)
		}
	})
}

func TestSyncPrefixBoundsOnlyItsGrants(t *testing.T) {
	lower, upper := grantPrefix("s1")
	inside := GrantKey("s1", "x")
	others := [][]byte{GrantKey("s10", "x"), GrantKey("s", "x"), GrantKey("s1\x00", "x"),
		ByEntitlementKey("s1", "e", "t", "p", "x"), SyncMetaKey("s1")}
	if bytes.Compare(inside, lower) < 0 || bytes.Compare(inside, upper) >= 0 {
		t.Fatalf("grant key of the sync falls outside its bounds")
	}
	for _, k := range others {
		if bytes.Compare(k, lower) >= 0 && bytes.Compare(k, upper) < 0 {
			t.Errorf("key %q of another table or sync falls inside the bounds", k)
		}
	}
}
