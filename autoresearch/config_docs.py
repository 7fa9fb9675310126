"""What each config key does, in the words of the config reference (docs/reference/config.md).

The reference is generated from the config's dataclasses (each key, its type and its default) and
these words (`python -m autoresearch.reference`); a test fails when a key of the dataclasses has
none here, or this names a key they do not have. Keys of the tables a proposer reads
(`proposer.*`) and of the metric tables are said here alone: they are not dataclass fields.
"""

from __future__ import annotations

from .config import TESTS_PROTECTED

__all__ = ["MEANINGS", "SAID_DEFAULTS"]

# key -> what it does (Markdown).
MEANINGS: dict[str, str] = {
    "session.name": (
        "the session; its branch is `autoresearch/<name>`: letters, digits, `.`, `_`, `-`"
    ),
    "session.journal": "the journal",
    "session.ideas": "the ideas backlog",
    "session.state_dir": "worktree, logs, lock; empty: `<git dir>/autoresearch/<name>`",
    "session.keep_logs": "keep the logs of kept experiments and of the last N; 0 keeps every log",
    "session.max_run_log_mb": (
        "one run's log keeps its first and last 4 MB, and says how much was cut between"
    ),
    "session.max_logs_mb": (
        "when the session's logs pass this, the retention rule runs between experiments, "
        "keeping fewer recent ones until they fit"
    ),
    "session.preflight": (
        "a new session first builds, benches once and runs the checks on its base, and "
        "refuses the night when a metric is missing or the checks fail"
    ),
    "target.repo": "the git repository to experiment on",
    "target.base": "the commit a new session starts from",
    "target.git_hooks": (
        "run your git hooks, commit signing and your config's filter and diff drivers for the"
        " loop's own git calls (Git LFS needs it)"
    ),
    "bench.command": "run with bash in the worktree; prints METRIC lines",
    "bench.build": "run once per arm before its bench runs (optional)",
    "bench.fetch": (
        "run before the night's first build (`check` and `run`), unconfined and with the "
        "network, in your checkout, with `AUTORESEARCH_FETCHED` set to a directory of the "
        "session's: what it leaves there, every build, bench and checks run reads (read-only, "
        "confined or not) through the same variable. init writes it for a CMake project that "
        "fetches its dependencies with FetchContent (optional)"
    ),
    "bench.timeout_s": "wall-clock limit per bench run and per build",
    "bench.calibration_runs": (
        "bench runs of the best, at the start and after each keep (>= 4; with 16, eight A/A "
        "pairs: the A/A check can fail, the noise estimate holds still, and their spread "
        "gives each decision's test 7 more degrees of freedom)"
    ),
    "bench.go_bench": "also read `go test -bench` rows",
    "bench.format": (
        "how the bench reports beyond METRIC lines: `go`, `criterion`, `criterion-json`, "
        "`libtest`, `pytest-benchmark`, `google-benchmark`, `hyperfine`, `jmh`, "
        "`benchmarkdotnet`, `vitest`, `mitata`, `asv`, `catch2`, `bmf`; `auto` recognises "
        "each by its shape"
    ),
    "bench.output": (
        "a file the bench writes its results to, relative to its tree (removed before each "
        "run, read after it)"
    ),
    "bench.keep": (
        'build output (gitignore patterns, e.g. `"target/"`) that each arm\'s tree keeps '
        "across the reverts between experiments, so that builds are incremental"
    ),
    "bench.env": "environment for the bench",
    "bench.pass_env": (
        'variables of your environment (names or patterns such as `"GRANTBENCH_*"`) the '
        "build, bench and checks get beyond the toolchains' allow-list"
    ),
    "bench.rows": (
        "rows of each benchmark one run reports in a tool's format (`go test -count N`: N); "
        "more is a `crash`, since rows the timed program printed itself would move the "
        "median; 0: not declared"
    ),
    "bench.cpus": 'pin bench and build to these CPUs (`taskset -c`, e.g. `"1"` or `"2-3"`)',
    "bench.warmup_runs": (
        "runs of each arm before its measured ones, dropped (cold caches after a build)"
    ),
    "bench.repeat": "runs in a row that make one sample (pyperf's and hyperfine's repetition)",
    "bench.sentinel_command": (
        "prints only the sentinels' METRIC lines; run instead of the bench while a decided "
        "win waits for an unresolved sentinel"
    ),
    "bench.aggregate": (
        "how `repeat` runs make one sample: `best` (the least disturbed: the minimum of a "
        "lower-is-better metric) or `median`"
    ),
    "checks.command": "exit 0 when the code is correct",
    "checks.timeout_s": "wall-clock limit for the checks",
    "checks.when": "`keep`: before each keep; `always`: every candidate; `never`",
    "checks.env": "environment for the checks",
    "metric.name": "the primary metric",
    "metric.direction": "`lower` or `higher` is better",
    "metric.unit": "for display",
    "metric.fallback": (
        "a metric the night decides on instead when a calibration finds `name` too noisy for "
        "the effect asked for and it is not (the fastest round, which `init` writes for a "
        "harness that reports one); from then on, for the whole session"
    ),
    "[[secondary]]": "`name`, `direction`, `unit`: reported in every record",
    "[[sentinel]]": (
        "`name`, `budget_pct`, `direction`, `unit`: may not worsen by more than the budget"
    ),
    "scope.include": "globs a patch may touch (`*` within a directory, `**` across)",
    "scope.protect": (
        "globs a patch may never touch, on top of the bench and checks scripts, "
        "`autoresearch.toml`, `**/go.mod`, `**/go.sum`, `.git`"
    ),
    "scope.allow_binary": "accept binary patches",
    "scope.allow_tests": (
        "let a patch edit the tests, the benchmarks and their configuration, protected by "
        f"default ({', '.join(f'`{g}`' for g in TESTS_PROTECTED)}): what judges a change is not "
        "the change's to edit"
    ),
    "budget.max_experiments": "experiments in the session",
    "budget.max_hours": "hours of this run",
    "budget.stop_after_no_keep": "stop after N experiments in a row without a keep (0: never)",
    "budget.retries": (
        "how many more times an undecided hypothesis (inconclusive, interrupted, baseline "
        "failed) is measured"
    ),
    "decision.min_effect_pct": "the floor: never claim a smaller change",
    "decision.noise_multiplier": "> 0 raises the floor to this many times the measured noise",
    "decision.alpha": "the false-keep rate over all looks (the boundaries spend exactly this)",
    "decision.min_runs": "runs per arm (pairs) at the first look",
    "decision.max_runs": (
        "the most runs per arm a decision may take (the design's cap is often lower, see below)"
    ),
    "decision.looks": "looks from `min_runs` to the cap, spaced geometrically",
    "decision.paired": "judge the within-pair log ratios; `false`: the two arms as two samples",
    "decision.budget_s": (
        "bench seconds one decision may take (caps the runs at the calibrated run time); 0: none"
    ),
    "decision.target_effect_pct": (
        "the win each decision's futility stops give up at most 5% of the time, and the "
        "effect the power check at calibration asks to detect; a bench that cannot detect "
        "three times it is refused before the night (`--accept-noise` runs it anyway)"
    ),
    "decision.sentinel_confidence": (
        "one-sided confidence of a sentinel's non-inferiority, its error shared out over the "
        "looks in proportion to n"
    ),
    "decision.agree_with": "secondary or sentinel metrics a small win must move the same way",
    "decision.confirm": "confirm the session at the end of a run that kept something",
    "decision.confirm_runs": "runs per arm of a confirmation",
    "[[proposer]]": (
        "where hypotheses come from, in order: `kind` and its options "
        "(see [Proposers](../guides/proposers.md))"
    ),
    "proposer.dir": "the queue's directory of `*.patch` / `*.diff` files",
    "[[proposer.knob]]": (
        "a sweep's knobs: `name`, `file`, `pattern`, `values` or `min`/`max`/`scale`"
    ),
    "proposer.preset": (
        "the agent CLI: `claude`, `codex`, `aider`, `gemini`, `opencode`, `command` (see "
        "[Proposers](../guides/proposers.md) for its other keys)"
    ),
    "report.comparison": (
        "the engine the PR compares against: the primary metric's first word replaced by this"
    ),
    "report.comparison_label": "its name in tables (`SQLite`)",
    "report.templates": (
        "a directory of templates overriding the built-in `pr.md.j2` and `report.md.j2`"
    ),
    "cluster.scheduler": (
        "a Dask scheduler's address (`tcp://host:8786`) or `local:N`: measure on bench hosts "
        "([Several bench hosts](../guides/bench-hosts.md)); empty: here"
    ),
    "cluster.resource": (
        "the worker resource an experiment holds: give each bench host's worker one unit"
    ),
    "cluster.remote": (
        "a git URL the hosts fetch the session branch from; empty: a bundle sent through Dask"
    ),
    "cluster.workdir": (
        "where a host keeps its clone (kept across worker restarts); empty: the worker's "
        "local directory"
    ),
    "cluster.remeasure": (
        "times a win measured against a best that moved is measured again before it is undecided"
    ),
    "cluster.remeasure_when": (
        "when such a win is measured again: `overlap`, only when the keeps since touched one "
        "of its files (else kept on its measurement); `always`"
    ),
    "cluster.connect_timeout_s": "how long to wait for the scheduler and its first bench worker",
    "cluster.scheduler_grace_s": (
        "how long a lost scheduler may take to come back before the night stops (its "
        "experiments in flight recorded as interrupted)"
    ),
    "sandbox.mode": (
        "confine each build, bench, sentinel and checks run with bubblewrap: `auto` when this"
        " machine can (else one warning a run), `bwrap` always (refuse without it), `off` "
        "never ([Confinement](../concepts/confinement.md))"
    ),
    "sandbox.required": 'refuse to run unconfined (as `mode = "bwrap"`)',
    "sandbox.network": "confined runs may reach the network",
    "sandbox.build_network": (
        "the build alone may reach the network (it fetches dependencies; the bench and checks "
        "still cannot), with the toolchains' offline switches off for it"
    ),
    "sandbox.unix_sockets": (
        "confined runs may make Unix sockets (refused by default: one on the host reaches "
        "outside the sandbox)"
    ),
    "sandbox.writable": "more paths a run may write, shared by both arms (`~` expands)",
    "sandbox.read": "what a run reads of your home or your checkout beyond the tools on its PATH "
    "and their toolchains' stores, the only parts of those it sees ([the home a run sees]"
    "(../concepts/confinement.md#the-home-a-run-sees)); shown read-only (`~` expands)",
    "sandbox.caches": (
        "env var -> directory name: one cache directory per arm, "
        "`<state>/caches/<arm>/<name>` (seen at `<state>/caches/<name>`), e.g. "
        '`{ GOCACHE = "go-build" }`'
    ),
    "sandbox.cache_seeds": (
        "env var -> a directory copied into the arm's cache the first time (a warm start), "
        'e.g. `{ GOCACHE = "~/.cache/go-build" }`'
    ),
    "sandbox.git": (
        "runs see the repository's git directory (a build that reads its version from git: "
        "setuptools-scm, `git describe`); by default hidden, since its branch and changes tell "
        "the candidate's tree from the best's"
    ),
    "equivalence.command": (
        "a command whose output must be the best's, byte for byte, before every bench ([the "
        "holdout and the equivalence "
        "check](../concepts/decision-rule.md#does-the-win-generalize-the-holdout-and-the-equivalence-check))"
    ),
    "equivalence.files": "tree-relative files compared instead of its standard output",
    "equivalence.timeout_s": "per run",
    "holdout.command": (
        "a workload measured, paired, before every keep and at the confirmation; runs in the "
        "arm's tree; `AUTORESEARCH_HOLDOUT` (set in every measured run, readable in its own "
        "alone) names its first file"
    ),
    "holdout.files": (
        "what it needs, outside the repository's tree: hidden from every confined run but its"
        " own (`~` expands)"
    ),
    "holdout.metric": "the metric of its output that is judged",
    "holdout.pairs": "pairs before a keep",
    "holdout.budget_pct": "refused when shown worse by more than this",
    "holdout.require_win": "refused unless the holdout shows a win too",
    "holdout.max_pairs": (
        "a holdout still undecided runs `pairs` more, up to this many (each look's interval "
        "widened for the looks allowed); 0: three times `pairs`"
    ),
    "holdout.min_gain_pct": (
        "refused when the holdout shows the change gains less than this there (its "
        "interval's better end short of it: fast only on the bench's inputs); negative: "
        "`decision.min_effect_pct`"
    ),
    "holdout.min_share": (
        "refused too when the holdout shows the change gains less than this share of what "
        "the bench showed it gain (a third: worth 50% on the bench and under 17% elsewhere, "
        "it was tuned to the bench)"
    ),
    "profile.command": (
        "writes a profile of the best to `$AUTORESEARCH_PROFILE_OUT`, once after each "
        "calibration ([Where the time goes](../concepts/profiles.md))"
    ),
    "profile.format": (
        "`folded`, `pprof` (read with `go tool pprof`) or `perf` (read with `perf script`)"
    ),
    "profile.timeout_s": "of the profile's run",
    "profile.top": "frames shown in `state`, the prompt and `profile`",
}

# The default of a key that is not a plain value (required, computed): as the reference says it.
SAID_DEFAULTS: dict[str, str] = {
    "metric.name": "required",
    "[[secondary]]": "none",
    "[[sentinel]]": "none",
    "[[proposer]]": "one queue",
    "[[proposer.knob]]": "none",
    "proposer.preset": "required for `agent`",
    "holdout.metric": "the primary's name",
}
