// Command grantbench measures the grant store and prints METRIC lines for autoresearch, plus
// `go test -bench` style rows for people. Under autoresearch the METRIC lines go to the channel
// it gives (the descriptor AUTORESEARCH_METRIC_FD names), taken out of the environment and
// closed for any program started: what the engine prints is then only the log. Every run checks
// the count it reads back, so a change that loses or duplicates grants fails loudly instead of
// looking fast.
//
// GRANTBENCH_SEED and GRANTBENCH_SKEW=zipf change the grants written (the holdout workload's
// inputs), GRANTBENCH_LABEL names the metrics without engine or scale (`<label>_writepack_ms`).
// GRANTBENCH_CPUPROFILE=<file> writes a CPU profile of the run there (the loop's [profile]).
// GRANTBENCH_DIGEST=<scale> measures nothing: it writes that many grants and rewrites of a tenth
// of them through each engine (Pebble through its packed file) and prints the digest of what
// each stored, the loop's output equivalence check.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"grantstore/grantspb"
	"grantstore/grantstore"
	"grantstore/workload"
)

const defaultSeed = 20260101

// Where METRIC lines go: the loop's channel when it gives one, else stdout.
var metrics io.Writer = os.Stdout

type result struct {
	ns, bytes, allocs float64
}

func main() {
	if given := os.Getenv("AUTORESEARCH_METRIC_FD"); given != "" {
		fd, err := strconv.Atoi(given)
		if err != nil || fd < 3 {
			fmt.Fprintf(os.Stderr, "grantbench: AUTORESEARCH_METRIC_FD=%q is not a descriptor\n", given)
			os.Exit(1)
		}
		syscall.CloseOnExec(fd)
		os.Unsetenv("AUTORESEARCH_METRIC_FD")
		metrics = os.NewFile(uintptr(fd), "metrics")
	}
	if path := os.Getenv("GRANTBENCH_CPUPROFILE"); path != "" {
		out, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "grantbench: GRANTBENCH_CPUPROFILE: %v\n", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(out); err != nil {
			fmt.Fprintf(os.Stderr, "grantbench: cpu profile: %v\n", err)
			os.Exit(1)
		}
		err = run()
		pprof.StopCPUProfile()
		out.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "grantbench: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "grantbench: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	if spec := os.Getenv("GRANTBENCH_DIGEST"); spec != "" {
		n, err := workload.ParseScale(spec)
		if err != nil {
			return fmt.Errorf("GRANTBENCH_DIGEST: %w", err)
		}
		return digest(ctx, n)
	}
	pebbleScales, err := scales("GRANTBENCH_SCALES", "1k,10k,100k")
	if err != nil {
		return err
	}
	sqliteScales, err := scales("GRANTBENCH_SQLITE_SCALES", "1k,10k")
	if err != nil {
		return err
	}
	scratch, err := os.MkdirTemp(os.Getenv("GRANTBENCH_TMPDIR"), "grantbench-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)

	for _, n := range pebbleScales {
		if err := benchPebble(ctx, scratch, n); err != nil {
			return fmt.Errorf("pebble %s: %w", workload.ScaleName(n), err)
		}
	}
	for _, n := range sqliteScales {
		if err := benchSQLite(ctx, scratch, n); err != nil {
			return fmt.Errorf("sqlite %s: %w", workload.ScaleName(n), err)
		}
	}
	return nil
}

func scales(env, def string) ([]int, error) {
	spec, set := os.LookupEnv(env)
	if !set {
		spec = def
	}
	var out []int
	for _, part := range strings.Split(spec, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		n, err := workload.ParseScale(part)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", env, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// iterations runs small scales several times (one run of 1k grants is too short to time
// alone), capped by the environment variable `capEnv` for quick runs.
func iterations(n int, capEnv string) int {
	limit := 15
	if v, err := strconv.Atoi(os.Getenv(capEnv)); err == nil && v > 0 {
		limit = v
	}
	return max(1, min(limit, 300_000/n))
}

// grants are the workload's n grants for this run's seed and key distribution.
func grants(n int) ([]*grantspb.GrantRecord, error) {
	seed := uint64(defaultSeed)
	if given := os.Getenv("GRANTBENCH_SEED"); given != "" {
		v, err := strconv.ParseUint(given, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("GRANTBENCH_SEED=%q is not a number", given)
		}
		seed = v
	}
	switch skew := os.Getenv("GRANTBENCH_SKEW"); skew {
	case "", "uniform":
		return workload.Grants(n, seed), nil
	case "zipf":
		return workload.GrantsSkewed(n, seed), nil
	default:
		return nil, fmt.Errorf("GRANTBENCH_SKEW=%q (uniform or zipf)", skew)
	}
}

// metricName is "<engine>_<op>_<scale>", or "<label>_<op>" under GRANTBENCH_LABEL.
func metricName(engine, op, scale string) string {
	if label := os.Getenv("GRANTBENCH_LABEL"); label != "" {
		return label + "_" + op
	}
	return engine + "_" + op + "_" + scale
}

func benchPebble(ctx context.Context, scratch string, n int) error {
	grants, err := grants(n)
	if err != nil {
		return err
	}
	name := workload.ScaleName(n)
	var packed string
	write, err := measure(iterations(n, "GRANTBENCH_MAX_ITERS"), scratch, "pebble-"+name+"-w", func(dir string) error {
		p, err := workload.WritePackPebble(ctx, dir, grants)
		packed = p
		return err
	})
	if err != nil {
		return fmt.Errorf("write pack: %w", err)
	}
	info, err := os.Stat(packed)
	if err != nil {
		return err
	}
	read, err := measure(iterations(n, "GRANTBENCH_MAX_ITERS"), scratch, "pebble-"+name+"-r", func(dir string) error {
		got, err := workload.UnpackReadGrants(ctx, packed, dir)
		if err != nil {
			return err
		}
		if got != n {
			return fmt.Errorf("read back %d grants, wrote %d", got, n)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("unpack read: %w", err)
	}
	report("WritePack/pebble/"+name, metricName("pebble", "writepack", name), write)
	report("UnpackReadGrants/pebble/"+name, metricName("pebble", "readpaginated", name), read)
	fmt.Fprintf(metrics, "METRIC %s_bytes=%d\n", metricName("pebble", "packed", name), info.Size())
	return nil
}

func benchSQLite(ctx context.Context, scratch string, n int) error {
	grants, err := grants(n)
	if err != nil {
		return err
	}
	name := workload.ScaleName(n)
	var path string
	write, err := measure(iterations(n, "GRANTBENCH_SQLITE_MAX_ITERS"), scratch, "sqlite-"+name+"-w", func(dir string) error {
		p, err := workload.WriteSQLite(ctx, dir, grants)
		path = p
		return err
	})
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	e, err := grantstore.OpenSQLite(path)
	if err != nil {
		return err
	}
	defer e.Close()
	got, err := workload.CountAll(ctx, e, "sync-00000001")
	if err != nil {
		return err
	}
	if got != n {
		return fmt.Errorf("read back %d grants, wrote %d", got, n)
	}
	report("WritePack/sqlite/"+name, metricName("sqlite", "writepack", name), write)
	return nil
}

// digest prints what each engine stored of n grants and rewrites of a tenth of them, written
// as one sync: Pebble's read back through its packed file, SQLite's from its database.
func digest(ctx context.Context, n int) error {
	scratch, err := os.MkdirTemp(os.Getenv("GRANTBENCH_TMPDIR"), "grantdigest-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	written, err := grants(n)
	if err != nil {
		return err
	}
	written = append(written, workload.Rewrites(written, n/10)...)

	db, err := grantstore.OpenPebble(filepath.Join(scratch, "db"))
	if err != nil {
		return err
	}
	if _, err := workload.WriteSync(ctx, db, written); err != nil {
		db.Close()
		return fmt.Errorf("pebble: %w", err)
	}
	packed := filepath.Join(scratch, "grants.pack")
	if err := grantstore.Pack(db, packed); err != nil {
		db.Close()
		return fmt.Errorf("pebble pack: %w", err)
	}
	if err := db.Close(); err != nil {
		return err
	}
	unpacked, m, err := grantstore.OpenPacked(packed, filepath.Join(scratch, "unpacked"))
	if err != nil {
		return fmt.Errorf("pebble unpack: %w", err)
	}
	defer unpacked.Close()
	if err := printDigest(ctx, "pebble", unpacked, m.SyncID); err != nil {
		return err
	}

	lite, err := grantstore.OpenSQLite(filepath.Join(scratch, "grants.sqlite"))
	if err != nil {
		return err
	}
	defer lite.Close()
	id, err := workload.WriteSync(ctx, lite, written)
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return printDigest(ctx, "sqlite", lite, id)
}

func printDigest(ctx context.Context, engine string, e grantstore.Engine, syncID string) error {
	sum, count, err := workload.DigestSync(ctx, e, syncID)
	if err != nil {
		return fmt.Errorf("%s: %w", engine, err)
	}
	fmt.Printf("%s grants=%d sha256=%s\n", engine, count, sum)
	return nil
}

// measure runs op `iters` times, each in a fresh directory made before the clock starts: the
// median wall time, and allocations per op.
func measure(iters int, scratch, prefix string, op func(dir string) error) (result, error) {
	var times []float64
	var before, after runtime.MemStats
	var allocs, bytes uint64
	for i := 0; i < iters; i++ {
		dir := filepath.Join(scratch, fmt.Sprintf("%s%d", prefix, i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return result{}, err
		}
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		if err := op(dir); err != nil {
			return result{}, err
		}
		times = append(times, float64(time.Since(start).Nanoseconds()))
		runtime.ReadMemStats(&after)
		allocs += after.Mallocs - before.Mallocs
		bytes += after.TotalAlloc - before.TotalAlloc
	}
	sort.Float64s(times)
	return result{
		ns:     median(times),
		bytes:  float64(bytes) / float64(iters),
		allocs: float64(allocs) / float64(iters),
	}, nil
}

func median(sorted []float64) float64 {
	mid := len(sorted) / 2
	if len(sorted)%2 == 1 {
		return sorted[mid]
	}
	return (sorted[mid-1] + sorted[mid]) / 2
}

func report(bench, metric string, r result) {
	fmt.Printf("Benchmark%s\t%d\t%.0f ns/op\t%.0f B/op\t%.0f allocs/op\n",
		bench, 1, r.ns, r.bytes, r.allocs)
	fmt.Fprintf(metrics, "METRIC %s_ms=%.3f\n", metric, r.ns/1e6)
	fmt.Fprintf(metrics, "METRIC %s_allocs_op=%.0f\n", metric, r.allocs)
	fmt.Fprintf(metrics, "METRIC %s_bytes_op=%.0f\n", metric, r.bytes)
}
