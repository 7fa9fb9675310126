"""Real packages for the first hour (benchmarks/first_hour.py), each as its registry serves it.

- `rust-crate`: the hex crate 0.4.2 from crates.io, as `cargo` downloads it: its manifest
  normalised by the registry (`[dev-dependencies.criterion]`), criterion 0.3 (whose listing
  says `name: bench`, and which has no `--exact`), nine benchmarks, `Cargo.lock` ignored. The
  win is written here, not upstream's: `encode` fills a `Vec` sized up front from the digit
  table instead of collecting a `char` iterator into a `String`.
- `python-upstream`: cattrs 23.2.3 from PyPI (a src layout, its benchmarks pytest-benchmark
  tests), installed in a virtualenv of its own with `pip install -e .` as its contributors do,
  its test dependencies at the versions its `pdm.lock` pins. The win is upstream's:
  python-attrs/cattrs#388, "Stop generating kwonly params for speed" (the generated
  structuring functions take their converters as positional parameters with defaults, which
  CPython fills from a tuple, not keyword-only ones, filled from a dict). The base is 23.2.3
  with that one line put back as it was before #388, in both files it touched.

Each one's truth is measured outside the tool after the night: its harness run directly on
the slow and the fast file alternately.
"""

from __future__ import annotations

import io
import statistics
import subprocess
import sys
import tarfile
import tomllib
import urllib.request
from pathlib import Path

from autoresearch.readers.formats import read_format

__all__ = ["PACKAGES", "alternately", "cattrs_package", "hex_crate"]

HEX = "https://static.crates.io/crates/hex/hex-0.4.2.crate"
HEX_SLOW = "pub fn encode<T: AsRef<[u8]>>(data: T) -> String {\n    data.encode_hex()\n}\n"
HEX_FAST = """pub fn encode<T: AsRef<[u8]>>(data: T) -> String {
    let data = data.as_ref();
    let mut out = Vec::with_capacity(data.len() * 2);
    for &byte in data {
        out.push(HEX_CHARS_LOWER[(byte >> 4) as usize]);
        out.push(HEX_CHARS_LOWER[(byte & 0x0f) as usize]);
    }
    String::from_utf8(out).expect("hex digits are ASCII")
}
"""


def _members(data: bytes) -> dict[str, str]:
    """A gzipped tarball's text files, by path below its top folder (`hex-0.4.2/`)."""
    files = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            handle = tar.extractfile(member) if member.isfile() else None
            if handle is None:
                continue
            rel = member.name.partition("/")[2]
            try:
                files[rel] = handle.read().decode("utf-8")
            except UnicodeDecodeError:
                continue  # a binary file: none of these packages' code or benchmarks
    return files


def hex_crate(scratch: Path) -> dict:
    """hex 0.4.2 from crates.io: its files, the README's steps and the three hypotheses."""
    with urllib.request.urlopen(HEX, timeout=120) as response:
        files = _members(response.read())
    files.pop(".cargo_vcs_info.json", None)
    lib = files["src/lib.rs"]
    assert HEX_SLOW in lib, "hex 0.4.2's encode"
    return {
        "files": {**files, ".gitignore": "target/\nCargo.lock\n"},
        "fetch": ["cargo", "fetch", "--quiet"],
        "init": ["--metric", "hex_encode_ns"],
        "path": "src/lib.rs",
        "slow": lib,
        "win": lib.replace(HEX_SLOW, HEX_FAST),
        "null": lib.replace(
            "/// Encodes `data` as hex string using lowercase characters.",
            "/// Encodes `data` as a hex string in lowercase characters.",
        ),
        # a leftover self-check that encodes twice
        "regression": lib.replace(
            "    data.encode_hex()\n}\n",
            "    let once: String = data.encode_hex();\n    assert_eq!(once.len() % 2, 0);\n"
            "    data.encode_hex()\n}\n",
            1,
        ),
        "truth": _criterion_truth,
    }


def _criterion_truth(repo: Path, spec: dict, rounds: int = 5) -> float:
    """The win's change measured with criterion itself, run directly."""
    argv = ["cargo", "bench", "--quiet", "--bench", "hex", "--", "^hex_encode$", "--noplot"]
    return alternately(repo, spec, argv, lambda out: read_format("criterion", out), rounds)


def alternately(repo: Path, spec: dict, argv: list[str], read, rounds: int = 5) -> float:
    """The change from the slow files to the win's, each side run `rounds` times alternately
    in `repo` (the session's base checkout) and read from its output by `read`: the median
    of each side's figures."""
    metric = spec["init"][spec["init"].index("--metric") + 1]
    halves = {spec["path"]: (spec["slow"], spec["win"]), **spec.get("also", {})}
    seen: dict[str, list[float]] = {"slow": [], "win": []}
    try:
        for _ in range(rounds):
            for side in seen:
                for path, (slow, fast) in halves.items():
                    (repo / path).write_text(fast if side == "win" else slow)
                done = subprocess.run(
                    argv, cwd=repo, capture_output=True, text=True, check=True, timeout=900
                )
                seen[side].append(read(done.stdout)[metric])
    finally:
        for path, (slow, _) in halves.items():
            (repo / path).write_text(slow)
    return round((statistics.median(seen["win"]) / statistics.median(seen["slow"]) - 1) * 100, 1)


CATTRS = "cattrs==23.2.3"
# What #388 changed, in src/cattrs/gen/__init__.py and src/cattrs/gen/typeddicts.py.
KWONLY, POSITIONAL = (
    'f"def {fn_name}(o, _, *, {internal_arg_line}):"',
    ('f"def {fn_name}(o, _, {internal_arg_line}):"'),
)
CATTRS_METRIC = "test_structure_attrs_primitives_unstructurestrategy_as_dict_converter_ns"
# Its test group and the extras its tests import, at the versions pdm.lock pins.
CATTRS_TEST_DEPS = [
    *("attrs", "hypothesis", "pytest", "pytest-benchmark", "immutables", "typing-extensions"),
    *("coverage", "ujson", "orjson", "msgpack", "pyyaml", "tomlkit", "cbor2", "pymongo"),
]


def cattrs_package(scratch: Path) -> dict:
    """cattrs 23.2.3 from PyPI with #388 put back, installed editable in a virtualenv."""
    into = scratch / "cattrs-sdist"
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         "-d", str(into), CATTRS],
        check=True, timeout=600,
    )  # fmt: skip
    (sdist,) = into.glob("cattrs-*.tar.gz")
    files = _members(sdist.read_bytes())
    files.pop("PKG-INFO", None)
    paths = ("src/cattrs/gen/__init__.py", "src/cattrs/gen/typeddicts.py")
    fast = {path: files[path] for path in paths}
    assert all(POSITIONAL in text for text in fast.values()), "23.2.3 has #388"
    slow = {path: text.replace(POSITIONAL, KWONLY) for path, text in fast.items()}
    files |= slow
    venv = scratch / "cattrs-venv"
    return {
        "files": {**files, ".gitignore": "__pycache__/\n*.egg-info/\n.venv/\n"},
        "install": lambda repo: _cattrs_venv(repo, venv),
        "init": ["--metric", CATTRS_METRIC, "--python", str(venv / "bin" / "python")],
        "path": paths[0],
        "slow": slow[paths[0]],
        "win": fast[paths[0]],
        # #388's other half, in the same hypothesis: upstream changed both files at once.
        "also": {paths[1]: (slow[paths[1]], fast[paths[1]])},
        "null": slow[paths[0]].replace(
            "def make_dict_structure_fn(",
            "def make_dict_structure_fn(  # the generated structuring function",
            1,
        ),
        # a defensive copy of every mapping before it is structured
        "edits": {
            "regression": (
                "src/cattrs/converters.py",
                files["src/cattrs/converters.py"],
                files["src/cattrs/converters.py"].replace(
                    "        return self._structure_func.dispatch(cl)(obj, cl)\n",
                    "        obj = dict(obj) if isinstance(obj, dict) else obj\n"
                    "        return self._structure_func.dispatch(cl)(obj, cl)\n",
                    1,
                ),
            ),
        },
        "truth": lambda repo, spec: _pytest_truth(repo, spec, venv),
    }


def _cattrs_venv(repo: Path, venv: Path) -> None:
    """The virtualenv a contributor makes: the package installed editable, its test
    dependencies at the versions its lock pins."""
    lock = tomllib.loads((repo / "pdm.lock").read_text())
    pins = {p["name"]: p["version"] for p in lock["package"]}
    wanted = [f"{name}=={pins[name]}" if name in pins else name for name in CATTRS_TEST_DEPS]
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "-e", str(repo), *wanted], check=True, timeout=1200)


def _pytest_truth(repo: Path, spec: dict, venv: Path) -> float:
    """The win's change measured with pytest-benchmark run directly."""
    out = repo / ".truth.json"
    node = "bench/test_attrs_primitives.py::test_structure_attrs_primitives"
    argv = [str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "--benchmark-only", f"--benchmark-json={out}",
            f"{node}[UnstructureStrategy.AS_DICT-Converter]"]  # fmt: skip
    try:
        return alternately(
            repo, spec, argv, lambda _: read_format("pytest-benchmark", out.read_text())
        )
    finally:
        out.unlink(missing_ok=True)


# Names the first hour gives them.
PACKAGES = {"rust-crate": hex_crate, "python-upstream": cattrs_package}
