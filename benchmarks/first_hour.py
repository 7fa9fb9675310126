"""A first hour per ecosystem, as the README says it, at `init`'s defaults.

python benchmarks/first_hour.py [--ecosystem python,go,rust,javascript] [--busy]
python benchmarks/first_hour.py --ecosystem rust-crate,python-upstream,cmake-library  # real

For each ecosystem, a small real project (the fixtures of its slow test: a Python package with
pytest-benchmark, a Go module with `go test -bench`, a Rust crate with criterion; and a real
upstream win in JavaScript, below) in a fresh git repository; `autoresearch init` with only the
flags the README names; three hypotheses queued (a null change, a regression, then the
known win); then `check` and `run` with no edit of the config and no `--accept-noise`. A row
per ecosystem: one bench run's seconds and what the calibration can detect (as `check` says
them), whether the night was refused as too noisy (and then, as a user would, the first edit
the refusal names made, and `run` again: `target_effect_pct` at what the bench can see, or the
fastest round when init wrote no fallback), the metric the night decided on (the primary, or
the `[metric] fallback` init writes for a harness that reports a fastest round), the
minutes of both runs, each hypothesis' status, and the confirmed change. What #53 asks of a
first hour: the win kept, neither the null nor the regression, no refusal on a quiet machine, a
night of three hypotheses under 30 minutes. Figures go to docs/results/first_hour/.

The JavaScript case is a real package and a real upstream change, both from the npm registry:
uuid 8.0.0's ESM build (`dist/esm-node`, what `import { v4 } from 'uuid'` runs on Node) vendored
in a package benched with Vitest, and the win is uuid 8.1.0's `bytesToUuid.js` (upstream
uuidjs/uuid#434, "optimize V8 performance of bytesToUuid": string concatenation in place of an
array join). The bench is `v4({ random })`, which runs bytesToUuid and not the random source
(the other change of 8.1.0). Its truth is measured outside the tool: `vitest bench` run
directly on the slow and the fast file, alternately, after the night.

Three more are real packages as their registries serve them (benchmarks/real_packages.py):
the hex crate 0.4.2 from crates.io (a manifest as the registry normalises it, criterion 0.3; a
win written here); cattrs 23.2.3 from PyPI, installed editable in a virtualenv of its own
(a src layout; the win upstream's python-attrs/cattrs#388, its base 23.2.3 without it); and
zlib-ng 2.2.5, the C library, from python-zlib-ng's sdist on PyPI (CMake, Google Benchmark
behind the project's WITH_BENCHMARKS option; the win upstream's zlib-ng/zlib-ng@34e18dbf, its
base 2.2.5 without it).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine_load import a_core_busy
from real_packages import PACKAGES, alternately
from results import record

from autoresearch.config import load_config
from autoresearch.decide.calibration import Calibration, minimum_noise
from autoresearch.decide.design import detectable_effect_pct
from autoresearch.journal.store import read_journal

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the ecosystems' fixtures, as their slow tests have them

import test_first_hour as go  # noqa: E402
import test_js_bench as js  # noqa: E402
import test_python_bench as py  # noqa: E402
import test_rust_bench as rs  # noqa: E402
from ecosystem_night import project  # noqa: E402
from synthetic import unified_patch  # noqa: E402
from test_js_bench import install as npm_install  # noqa: E402


def _ecosystems() -> dict[str, dict]:
    """Each: its files, init's flags, the file the hypotheses change, and that file's slow
    text with the win, the null and the regression."""
    return {
        "python": {
            "files": {
                "fibmod.py": py.SLOW,
                "test_fib_bench.py": py.BENCH_TEST,
                "test_fibmod.py": py.TEST,
            },
            "init": ["--metric", "test_fib_ns", "--scope", "fibmod.py", "--python", sys.executable],
            "path": "fibmod.py",
            "slow": py.SLOW,
            "win": py.FAST,
            "null": py.NULL,
            "regression": py.SLOW.replace(
                "    return n if", "    sum(range(48))  # a leftover check\n    return n if"
            ),
        },
        "go": {
            "files": {
                "go.mod": "module example.com/hashy\n\ngo 1.22\n",
                "hashy.go": go.SLOW,
                "hashy_test.go": go.TESTS,
            },
            "init": ["--metric", "sum64_1kib_ns_op", "--unit", "ns", "--scope", "hashy.go"],
            "path": "hashy.go",
            "slow": go.SLOW,
            "win": go.FAST,
            "null": go.SLOW.replace("// Sum64 is 64-bit", "// Sum64 is the 64-bit"),
            "regression": go.SLOW.replace("i < 24", "i < 48"),
        },
        "rust": {
            "files": {
                "Cargo.toml": rs.CARGO,
                "src/lib.rs": rs.SLOW,
                "benches/fib.rs": rs.BENCH.replace(
                    # criterion at its defaults: the bench init writes sizes the run
                    "    config = Criterion::default()\n"
                    "        .warm_up_time(Duration::from_millis(100))\n"
                    "        .measurement_time(Duration::from_millis(300))\n"
                    "        .sample_size(10);\n",
                    "    config = Criterion::default();\n",
                ).replace("use std::time::Duration;\n", ""),
                ".gitignore": "target/\nCargo.lock\n",
            },
            "init": ["--metric", "fib_20_ns"],
            "path": "src/lib.rs",
            "slow": rs.SLOW,
            "win": rs.FAST,
            "null": rs.NULL,
            "regression": rs.SLOW.replace(
                "    if n < 2 { n } else { fib(n - 1) + fib(n - 2) }",
                # eight opaque calls a call, adding nothing
                "    if n < 2 { n } else { (0..8u64).map(std::hint::black_box).fold(0, |a, _| a)"
                " + fib(n - 1) + fib(n - 2) }",
            ),
        },
    }


UUID_BENCH = """import { bench } from 'vitest';
import { v4 } from './uuid/index.js';

const random = Array.from({ length: 16 }, (_, i) => (i * 37) % 256);
bench('v4 of given bytes', () => { v4({ random }); });
"""
# uuid's README example: v4 of these bytes.
UUID_TEST = """import { expect, test } from 'vitest';
import { v4 } from './uuid/index.js';

test('v4 of given bytes', () => {
  const random = [0x10, 0x91, 0x56, 0xbe, 0xc4, 0xfb, 0xc1, 0xea,
                  0x71, 0xb4, 0xef, 0xe1, 0x67, 0x1c, 0x58, 0x36];
  expect(v4({ random })).toBe('109156be-c4fb-41ea-b1b4-efe1671c5836');
});
"""


def _uuid_build(version: str, scratch: Path) -> dict[str, str]:
    """uuid `version`'s ESM build for Node, as published on the npm registry: file name to text."""
    into = scratch / f"uuid-{version}"
    into.mkdir(parents=True, exist_ok=True)
    packed = subprocess.run(
        ["npm", "pack", f"uuid@{version}", "--silent"],
        cwd=into,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    subprocess.run(["tar", "xzf", packed.stdout.strip()], cwd=into, check=True)
    build = into / "package" / "dist" / "esm-node"
    return {f.name: f.read_text() for f in sorted(build.glob("*.js"))}


def _javascript(scratch: Path) -> dict:
    """uuid 8.0.0 vendored in a package benched with Vitest; the win is 8.1.0's bytesToUuid."""
    before, after = _uuid_build("8.0.0", scratch), _uuid_build("8.1.0", scratch)
    slow, v4 = before["bytesToUuid.js"], before["v4.js"]
    check = "  rnds[8] = rnds[8] & 0x3f | 0x80;"
    files = {f"src/uuid/{name}": text for name, text in before.items()}
    files |= {
        "package.json": json.dumps(js.PACKAGE, indent=2),
        "package-lock.json": js.VITEST_LOCK,
        "src/uuid.bench.js": UUID_BENCH,
        "src/uuid.test.js": UUID_TEST,
        ".gitignore": "node_modules/\n",
    }
    return {
        "files": files,
        "install": npm_install,  # the README's step: the dependencies fetched before the night
        "init": ["--metric", "v4_of_given_bytes_ns"],
        "path": "src/uuid/bytesToUuid.js",
        "slow": slow,
        "win": after["bytesToUuid.js"],
        # The null and the regression change v4.js, which the win leaves alone: every line of
        # bytesToUuid.js is within reach of the win's hunk, so neither would apply after it.
        "edits": {
            "null": ("src/uuid/v4.js", v4, v4.replace("{};\n", "{}; // the defaults\n", 1)),
            # a leftover self-check that formats the id twice
            "regression": (
                "src/uuid/v4.js",
                v4,
                v4.replace(check, f"{check}\n  if (bytesToUuid(rnds).length !== 36) throw 0;", 1),
            ),
        },
        "truth": _vitest_truth,
    }


def _vitest_truth(repo: Path, spec: dict) -> float:
    """The win's change measured with `vitest bench` run directly (real_packages.alternately):
    each run's median, as its JSON report gives it."""
    out = repo / ".truth.json"
    argv = ["npx", "vitest", "bench", "--run", "--outputJson", str(out)]
    metric = spec["init"][spec["init"].index("--metric") + 1]

    def median(_: str) -> dict[str, float]:
        (group,) = json.loads(out.read_text())["files"][0]["groups"]
        return {metric: group["benchmarks"][0]["median"]}

    try:
        return alternately(repo, spec, argv, median)
    finally:
        out.unlink(missing_ok=True)


def cli(repo: Path, *args: str, timeout: float = 7200) -> subprocess.CompletedProcess:
    """This tree's `autoresearch` in `repo`."""
    return subprocess.run(
        [sys.executable, "-m", "autoresearch", *args],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


CONTROLS = ("a null change", "a regression")


def first_hour(name: str, spec: dict, parent: Path) -> dict:
    """init, the three hypotheses, check, run: the ecosystem's row."""
    repo = project(parent, name, spec["files"])
    if "install" in spec:
        spec["install"](repo)
    init = cli(repo, "init", *spec["init"])
    if init.returncode != 0:
        raise SystemExit(f"{name}: init failed:\n{init.stderr}")
    # The controls first: each is written against the slow file, which a kept win replaces, so
    # queued after the win they would not apply, and "nothing else kept" would say nothing.
    for number, (kind, title) in enumerate(
        (("null", "a null change"), ("regression", "a regression"), ("win", "the known win")), 1
    ):
        path, old, new = spec.get("edits", {}).get(kind) or (spec["path"], spec["slow"], spec[kind])
        diff = unified_patch(path, old, new)
        if kind == "win":  # a change of several files (upstream's, whole)
            diff += "".join(unified_patch(p, a, b) for p, (a, b) in spec.get("also", {}).items())
        patch = f"Title: {title}\nMechanism: {kind}\n\n" + diff
        (repo / "hypotheses" / f"0{number}-{kind}.patch").write_text(patch)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "autoresearch session"], cwd=repo, check=True)
    check = cli(repo, "check")
    said = check.stdout + check.stderr
    run_s = re.search(r"one bench run took ([\d.]+)s", said)
    detect = re.search(r"detect ([\d.]+)% with 90% power", said)
    started = time.monotonic()
    night = cli(repo, "run", "--quiet")
    refused = "too noisy" in night.stderr
    advice = _advice(night.stderr) if refused else None
    if advice:  # what a user does next: the first edit the refusal names, and run again
        config = repo / "autoresearch.toml"
        pattern, replacement, said = advice
        text, edits = re.subn(pattern, replacement, config.read_text(), count=1)
        if edits != 1:
            raise SystemExit(f"{name}: no line for {said!r} in {config} to set")
        config.write_text(text)
        subprocess.run(["git", "commit", "-qam", "the refusal's advice"], cwd=repo, check=True)
        night = cli(repo, "run", "--quiet")
    minutes = (time.monotonic() - started) / 60
    journal = read_journal(repo / "experiments.jsonl")
    statuses: dict[str, list[str]] = {}  # a second look may measure a title again
    for r in journal.experiments:
        statuses.setdefault(r.title, []).append(str(r.status))
    confirmation = journal.confirmations[-1] if journal.confirmations else None
    primary = spec["init"][spec["init"].index("--metric") + 1]
    config = load_config(repo / "autoresearch.toml")
    config = dataclasses.replace(config, metric=dataclasses.replace(config.metric, name=primary))
    calibrations = [_seen(config, record) for record in journal.calibrations]
    truth = spec["truth"](repo, spec) if "truth" in spec else None
    return {
        "ecosystem": name,
        "check_exit": check.returncode,
        "run_s": float(run_s.group(1)) if run_s else None,
        "detectable_pct": float(detect.group(1)) if detect else None,
        "refused": refused,
        "advice_followed": advice[2] if advice else None,
        # The metric the night decided on: init's [metric] fallback when a calibration
        # found the primary too noisy, else the primary.
        "decided_on": next(
            (c.decides_on for c in journal.calibrations if c.decides_on),
            load_config(repo / "autoresearch.toml").metric.name,
        ),
        "night_exit": night.returncode,
        "night_min": round(minutes, 1),
        "statuses": statuses,
        "win_kept": "keep" in statuses.get("the known win", []),
        "nothing_else_kept": all("keep" not in statuses.get(t, []) for t in CONTROLS),
        # Measured and not kept: a control that did not apply or crashed tells nothing.
        "controls_measured": all(
            {"discard", "inconclusive"} & set(statuses.get(t, [])) for t in CONTROLS
        ),
        "calibrations": calibrations,
        "confirmed_pct": confirmation.change_pct if confirmation is not None else None,
        "truth_pct": truth,
    }


def _seen(config, record) -> dict:
    """What one calibration let the night see, as the rule designs it: the detectable change of
    `config`'s metric (the one `init` was given) and, where the harness reports it, of its
    fastest round's, at the night's decision settings (the config committed last)."""
    calibration = Calibration.from_record(record, config.metric.name)
    verdict = calibration.verdict(config)
    fastest = minimum_noise(config, calibration.samples)
    return {
        "detectable_pct": verdict.detectable_pct if verdict else None,
        "fastest_detectable_pct": (
            detectable_effect_pct(config, fastest[1], calibration.run_s) if fastest else None
        ),
    }


def _advice(refusal: str) -> tuple[str, str, str] | None:
    """The edit a refusal names first, as (the config text it replaces, the replacement, the
    line it sets): the same benchmark's quieter fastest round when it names one, else the
    target it can see."""
    metric = re.search(r'\(\[metric\] name = "(\w+)"', refusal)
    if metric:
        said = f'name = "{metric.group(1)}"'
        return r'(?ms)^(\[metric\][^\[]*?^)name = "\w+"', rf"\g<1>{said}", said
    fallback = re.search(r'\(\[metric\] fallback = "(\w+)"', refusal)
    if fallback:  # a config without one: set beside the primary's unit
        said = f'fallback = "{fallback.group(1)}"'
        return r'(?ms)^(\[metric\][^\[]*?^unit = "\w*"\n)', rf"\g<1>{said}\n", said
    target = re.search(r"\(target_effect_pct = ([\d.]+)\)", refusal)
    if target:
        said = f"target_effect_pct = {target.group(1)}"
        return r"(?m)^target_effect_pct = [\d.]+", said, said
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ecosystem", default="python,go,rust,javascript", help="comma-separated")
    parser.add_argument("--busy", action="store_true", help="another process keeps a core busy")
    args = parser.parse_args()
    ecosystems = {**_ecosystems(), "javascript": _javascript, **PACKAGES}
    wanted = args.ecosystem.split(",")
    if unknown := sorted(set(wanted) - set(ecosystems)):
        parser.error(f"unknown ecosystem {unknown}; known: {sorted(ecosystems)}")
    condition = "a core busy" if args.busy else "quiet"
    rows = []
    with tempfile.TemporaryDirectory() as scratch, a_core_busy(args.busy):
        for name in wanted:
            spec = ecosystems[name]
            spec = spec(Path(scratch)) if callable(spec) else spec
            row = {**first_hour(name, spec, Path(scratch)), "condition": condition}
            rows.append(row)
            print(
                f"{name:7} {condition:11} run {row['run_s']}s, detects {row['detectable_pct']}%, "
                f"refused {row['refused']} (then {row['advice_followed']}), "
                f"decided on {row['decided_on']}, "
                f"night {row['night_min']} min (exit {row['night_exit']}), {row['statuses']}, "
                f"confirmed {row['confirmed_pct']}, truth {row['truth_pct']}",
                flush=True,
            )
    record("first_hour", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
