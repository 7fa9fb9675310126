package grantstore

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func TestPackRoundTrip(t *testing.T) {
	dir := t.TempDir()
	e, err := OpenPebble(filepath.Join(dir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	id := writeSync(t, e, manyGrants(2000))
	packed := filepath.Join(dir, "grants.pack")
	if err := Pack(e, packed); err != nil {
		t.Fatal(err)
	}
	want, _ := listAll(t, e, id, 300)
	e.Close()

	opened, m, err := OpenPacked(packed, filepath.Join(dir, "work"))
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	if m.SyncID != id || m.Engine != "pebble" {
		t.Fatalf("manifest %+v", m)
	}
	got, _ := listAll(t, opened, m.SyncID, 300)
	if len(got) != len(want) || len(got) != 2000 {
		t.Fatalf("unpacked %d grants, packed %d", len(got), len(want))
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".checkpoint-*"))
	if len(leftovers) != 0 {
		t.Fatalf("checkpoint temp dirs left behind: %v", leftovers)
	}
}

type entry struct {
	name     string
	typeflag byte
	body     string
	linkname string
	size     int64 // declared size when it differs from the body (-1: use body)
}

// hostile builds a packed file with a valid header around the given tar entries.
func hostile(t *testing.T, entries []entry) string {
	t.Helper()
	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	for _, en := range entries {
		size := int64(len(en.body))
		if en.typeflag != tar.TypeReg {
			size = 0
		}
		hdr := &tar.Header{Name: en.name, Typeflag: en.typeflag, Mode: 0o644, Size: size,
			Linkname: en.linkname}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if size > 0 {
			tw.Write([]byte(en.body))
		}
	}
	tw.Close()
	return writeRaw(t, validHeader(t), compress(t, tarBuf.Bytes()))
}

func validHeader(t *testing.T) []byte {
	manifest, _ := json.Marshal(Manifest{FormatVersion: packFormatVersion, Engine: "pebble", SyncID: "s"})
	var b bytes.Buffer
	b.WriteString(packMagic)
	binary.Write(&b, binary.BigEndian, uint32(len(manifest)))
	b.Write(manifest)
	return b.Bytes()
}

func compress(t *testing.T, data []byte) []byte {
	var b bytes.Buffer
	zw, _ := zstd.NewWriter(&b)
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}

func writeRaw(t *testing.T, parts ...[]byte) string {
	path := filepath.Join(t.TempDir(), "x.pack")
	if err := os.WriteFile(path, bytes.Join(parts, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestUnpackRejectsHostileArchives(t *testing.T) {
	cases := map[string][]entry{
		"dot-dot":       {{name: "../escape", typeflag: tar.TypeReg, body: "x"}},
		"nested dotdot": {{name: "a/../../escape", typeflag: tar.TypeReg, body: "x"}},
		"absolute":      {{name: "/tmp/escape", typeflag: tar.TypeReg, body: "x"}},
		"symlink":       {{name: "link", typeflag: tar.TypeSymlink, linkname: "/etc"}},
		"hardlink":      {{name: "link", typeflag: tar.TypeLink, linkname: "../outside"}},
		"too big":       {{name: "big", typeflag: tar.TypeReg, body: strings.Repeat("x", 2048)}},
		"too many": {{name: "a", typeflag: tar.TypeDir}, {name: "b", typeflag: tar.TypeDir},
			{name: "c", typeflag: tar.TypeDir}, {name: "d", typeflag: tar.TypeDir}},
	}
	limits := UnpackLimits{MaxEntries: 3, MaxFileBytes: 1024, MaxTotalBytes: 4096}
	for name, entries := range cases {
		t.Run(name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "out")
			_, err := Unpack(hostile(t, entries), dest, limits)
			if !errors.Is(err, ErrUnsafe) {
				t.Fatalf("got %v, want ErrUnsafe", err)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(dest), "escape")); err == nil {
				t.Fatal("a file was written outside the destination")
			}
		})
	}
}

func TestUnpackTotalSizeCap(t *testing.T) {
	entries := []entry{
		{name: "a", typeflag: tar.TypeReg, body: strings.Repeat("x", 800)},
		{name: "b", typeflag: tar.TypeReg, body: strings.Repeat("x", 800)},
	}
	limits := UnpackLimits{MaxEntries: 10, MaxFileBytes: 1024, MaxTotalBytes: 1000}
	_, err := Unpack(hostile(t, entries), filepath.Join(t.TempDir(), "out"), limits)
	if err == nil || !strings.Contains(err.Error(), "more than 1000 bytes") {
		t.Fatalf("got %v", err)
	}
}

func TestUnpackReportsDamage(t *testing.T) {
	good := hostile(t, []entry{{name: "f", typeflag: tar.TypeReg, body: strings.Repeat("data", 5000)}})
	raw, _ := os.ReadFile(good)
	corrupt := bytes.Clone(raw)
	for i := len(validHeader(t)) + 20; i < len(corrupt)-8; i += 3 {
		corrupt[i] ^= 0x5a
	}
	cases := map[string][]byte{
		"empty":           {},
		"wrong magic":     []byte("NOTAPACKFILE...."),
		"cut in header":   raw[:10],
		"cut in manifest": raw[:len(validHeader(t))-3],
		"cut in body":     raw[:len(raw)-len(raw)/3],
		"corrupt body":    corrupt,
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Unpack(writeRaw(t, data), filepath.Join(t.TempDir(), "out"), DefaultUnpackLimits)
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("got %v, want ErrDamaged", err)
			}
		})
	}
}
