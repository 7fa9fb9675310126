package grantstore

// The engine's tuning knobs, one constant each, so that a tuning change (by hand or by a sweep)
// moves one number. autoresearch.toml declares each one as a sweep knob; keep the form
// `name = value` on one line, which the sweeps' patterns match.
const (
	// memTableMiB is the memtable size: small enough that the bench scales flush and compact
	// during the writes.
	memTableMiB = 4

	// memTableStopWrites is how many memtables may queue for flushing before writes stall.
	memTableStopWrites = 2

	// l0CompactionThreshold is the count of L0 files that starts a compaction into Lbase.
	l0CompactionThreshold = 2

	// maxCompactions is how many compactions may run at once when they fall behind.
	maxCompactions = 1

	// blockSizeKiB is the sstable data block size.
	blockSizeKiB = 4

	// bloomBitsPerKey sizes the sstables' bloom filters; 0 writes none.
	bloomBitsPerKey = 0

	// packZstdLevel is the packed file's zstd level: 1 fastest, 2 default, 3 better, 4 best.
	packZstdLevel = 2
)
