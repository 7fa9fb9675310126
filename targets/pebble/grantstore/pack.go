package grantstore

// The packed file: magic bytes, a manifest, then a zstd-compressed tar of a Pebble checkpoint.
//
//	"GRNTPACK" | uint32 big-endian manifest length | manifest JSON | zstd(tar(checkpoint))

import (
	"archive/tar"
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
)

const (
	packMagic         = "GRNTPACK"
	packFormatVersion = 1
	maxManifestBytes  = 1 << 20
)

// Manifest describes what a packed file holds.
type Manifest struct {
	FormatVersion int    `json:"format_version"`
	Engine        string `json:"engine"`
	SyncID        string `json:"sync_id"`
	CreatedUnix   int64  `json:"created_unix"`
}

// UnpackLimits bound what unpacking may write, so a hostile file cannot fill the disk.
type UnpackLimits struct {
	MaxEntries    int
	MaxFileBytes  int64
	MaxTotalBytes int64
}

// DefaultUnpackLimits are generous for real grant stores and still finite.
var DefaultUnpackLimits = UnpackLimits{MaxEntries: 100_000, MaxFileBytes: 8 << 30, MaxTotalBytes: 32 << 30}

// ErrDamaged marks a packed file that is truncated, corrupt, or not a packed file at all.
var ErrDamaged = errors.New("grantstore: packed file damaged")

// ErrUnsafe marks a packed file that tries to write outside its directory or beyond the limits.
var ErrUnsafe = errors.New("grantstore: packed file unsafe")

// Pack writes a checkpoint of the engine's store into a packed file at dst.
func Pack(e *PebbleEngine, dst string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".checkpoint-*")
	if err != nil {
		return err
	}
	defer removeTempDir(tmp)
	checkpoint := filepath.Join(tmp, "db")
	if err := e.DB().Checkpoint(checkpoint); err != nil {
		return fmt.Errorf("grantstore: checkpoint: %w", err)
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if err := writePacked(out, checkpoint, Manifest{
		FormatVersion: packFormatVersion,
		Engine:        "pebble",
		SyncID:        e.SyncID(),
		CreatedUnix:   time.Now().Unix(),
	}); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// removeTempDir deletes the checkpoint once it has been packed.
func removeTempDir(dir string) {
	os.RemoveAll(dir)
}

func writePacked(w io.Writer, dir string, m Manifest) error {
	manifest, err := json.Marshal(m)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	bw.WriteString(packMagic)
	binary.Write(bw, binary.BigEndian, uint32(len(manifest)))
	bw.Write(manifest)
	zw, err := zstd.NewWriter(bw, zstd.WithEncoderLevel(zstd.EncoderLevel(packZstdLevel)))
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		return addToTar(tw, dir, p, d)
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

func addToTar(tw *tar.Writer, root, p string, d fs.DirEntry) error {
	info, err := d.Info()
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return err
	}
	hdr, err := tar.FileInfoHeader(info, "")
	if err != nil {
		return err
	}
	hdr.Name = filepath.ToSlash(rel)
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(tw, f)
	return err
}

// OpenPacked unpacks a packed file into workDir/db and opens it.
func OpenPacked(src, workDir string) (*PebbleEngine, Manifest, error) {
	dbDir := filepath.Join(workDir, "db")
	m, err := Unpack(src, dbDir, DefaultUnpackLimits)
	if err != nil {
		return nil, m, err
	}
	e, err := OpenPebble(dbDir)
	if err != nil {
		return nil, m, err
	}
	e.syncID = m.SyncID
	return e, m, nil
}

// Unpack extracts a packed file into dest, which must not exist yet.
func Unpack(src, dest string, limits UnpackLimits) (Manifest, error) {
	var m Manifest
	f, err := os.Open(src)
	if err != nil {
		return m, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	if m, err = readHeader(r, src); err != nil {
		return m, err
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return m, err
	}
	if err := os.Mkdir(dest, 0o755); err != nil {
		return m, err
	}
	zr, err := zstd.NewReader(r)
	if err != nil {
		return m, fmt.Errorf("%w: %s: %v", ErrDamaged, src, err)
	}
	defer zr.Close()
	if err := extractTar(tar.NewReader(zr), dest, limits); err != nil {
		return m, fmt.Errorf("%s: %w", src, err)
	}
	return m, nil
}

func readHeader(r io.Reader, src string) (Manifest, error) {
	var m Manifest
	magic := make([]byte, len(packMagic))
	if _, err := io.ReadFull(r, magic); err != nil {
		return m, fmt.Errorf("%w: %s: truncated before the magic bytes", ErrDamaged, src)
	}
	if string(magic) != packMagic {
		return m, fmt.Errorf("%w: %s: not a packed grant file (magic %q)", ErrDamaged, src, magic)
	}
	var size uint32
	if err := binary.Read(r, binary.BigEndian, &size); err != nil {
		return m, fmt.Errorf("%w: %s: truncated in the header", ErrDamaged, src)
	}
	if size > maxManifestBytes {
		return m, fmt.Errorf("%w: %s: manifest of %d bytes", ErrDamaged, src, size)
	}
	raw := make([]byte, size)
	if _, err := io.ReadFull(r, raw); err != nil {
		return m, fmt.Errorf("%w: %s: truncated in the manifest", ErrDamaged, src)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("%w: %s: manifest: %v", ErrDamaged, src, err)
	}
	if m.FormatVersion != packFormatVersion || m.Engine != "pebble" {
		return m, fmt.Errorf("%w: %s: format %d of engine %q is not supported", ErrDamaged, src,
			m.FormatVersion, m.Engine)
	}
	return m, nil
}

func extractTar(tr *tar.Reader, dest string, limits UnpackLimits) error {
	var entries int
	var total int64
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: archive: %v", ErrDamaged, err)
		}
		entries++
		if entries > limits.MaxEntries {
			return fmt.Errorf("%w: more than %d entries", ErrUnsafe, limits.MaxEntries)
		}
		target, err := safeTarget(dest, hdr.Name)
		if err != nil {
			return err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if hdr.Size > limits.MaxFileBytes {
				return fmt.Errorf("%w: %s is %d bytes (limit %d)", ErrUnsafe, hdr.Name, hdr.Size,
					limits.MaxFileBytes)
			}
			total += hdr.Size
			if total > limits.MaxTotalBytes {
				return fmt.Errorf("%w: more than %d bytes in all", ErrUnsafe, limits.MaxTotalBytes)
			}
			if err := writeEntry(tr, target, hdr.Size); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: %s: entry type %q (links and devices are not allowed)",
				ErrUnsafe, hdr.Name, string(hdr.Typeflag))
		}
	}
}

// safeTarget maps an archive name into dest, refusing names that would land outside it.
func safeTarget(dest, name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") ||
		filepath.IsAbs(name) {
		return "", fmt.Errorf("%w: entry %q: absolute or unusual path", ErrUnsafe, name)
	}
	clean := path.Clean(name)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%w: entry %q escapes the directory", ErrUnsafe, name)
	}
	return filepath.Join(dest, filepath.FromSlash(clean)), nil
}

func writeEntry(r io.Reader, target string, size int64) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(r, size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "EOF") {
			return fmt.Errorf("%w: %s: truncated", ErrDamaged, target)
		}
		return fmt.Errorf("%w: %s: %v", ErrDamaged, target, err)
	}
	if n != size {
		return fmt.Errorf("%w: %s: truncated (%d of %d bytes)", ErrDamaged, filepath.Base(target), n, size)
	}
	return nil
}
