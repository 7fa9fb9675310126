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
- `cmake-library`: zlib-ng 2.2.5, whose whole tree python-zlib-ng's sdist on PyPI carries: a
  CMake project with Google Benchmark, whose benchmark executable is built only under the
  project's own option (`WITH_BENCHMARKS`, off by default), 71 ctest tests. The win is
  upstream's: zlib-ng/zlib-ng@34e18dbf, "Speed up crc32_[v]pclmulqdq on small strings" (with
  the 16-byte threshold the alignment work after it set). The base is 2.2.5 with CRC32()'s
  small-string branch put back as it was before, and the declaration it needs.

Each one's truth is measured outside the tool after the night: its harness run directly on
the slow and the fast file alternately.
"""

from __future__ import annotations

import io
import shutil
import statistics
import subprocess
import sys
import tarfile
import tomllib
import urllib.request
from pathlib import Path

from autoresearch.readers.formats import read_format

__all__ = ["PACKAGES", "alternately", "cattrs_package", "hex_crate", "zlib_ng_library"]

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


def _members(data: bytes, under: str = "") -> dict[str, str | bytes]:
    """A gzipped tarball's files, by path below its top folder (`hex-0.4.2/`) and `under`
    within it: text as text, the rest (test data) as bytes."""
    files: dict[str, str | bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            handle = tar.extractfile(member) if member.isfile() else None
            rel = member.name.partition("/")[2]
            if handle is None or not rel.startswith(under):
                continue
            content = handle.read()
            try:
                files[rel.removeprefix(under)] = content.decode("utf-8")
            except UnicodeDecodeError:
                files[rel.removeprefix(under)] = content
    return files


def _sdist(scratch: Path, requirement: str, under: str = "") -> dict[str, str | bytes]:
    """The files of `requirement`'s source distribution on PyPI, below `under` in it."""
    into = scratch / f"sdist-{requirement}"
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         "-d", str(into), requirement],
        check=True, timeout=600,
    )  # fmt: skip
    (sdist,) = into.glob("*.tar.gz")
    return _members(sdist.read_bytes(), under)


def hex_crate(scratch: Path) -> dict:
    """hex 0.4.2 from crates.io: its files, the README's steps and the three hypotheses."""
    with urllib.request.urlopen(HEX, timeout=120) as response:
        files = _members(response.read())
    files.pop(".cargo_vcs_info.json", None)
    lib = files["src/lib.rs"]
    assert HEX_SLOW in lib, "hex 0.4.2's encode"
    return {
        "files": {**files, ".gitignore": "target/\nCargo.lock\n"},
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
    files = _sdist(scratch, CATTRS)
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


ZLIB_NG = "zlib-ng==1.0.0"  # python-zlib-ng, whose sdist carries zlib-ng 2.2.5's whole tree
ZLIB_NG_TREE = "src/zlib_ng/zlib-ng/"
ZLIB_NG_FILE = "arch/x86/crc32_pclmulqdq_tpl.h"
ZLIB_NG_METRIC = "crc32_vpclmulqdq_16_ns"
# What zlib-ng/zlib-ng@34e18dbf (and the alignment work after it) changed in CRC32(): strings
# under 16 bytes take a byte-at-a-time loop inline, the rest the (v)pclmulqdq folding; before,
# every string under 64 bytes went through the generic braided C function.
CRC_SMALL = """    /* For lens smaller than ~12, crc32_small method is faster.
     * But there are also minimum requirements for the pclmul functions due to alignment */
    if (len < 16)
        return crc32_small(crc32, buf, len);
"""
CRC_BRAID = """    /* For lens < 64, crc32_braid method is faster. The CRC32 instruction for
     * these short lengths might also prove to be effective */
    if (len < 64)
        return PREFIX(crc32_braid)(crc32, buf, len);
"""
# The braid's declaration, which the file reached through headers 2.2.5 no longer has.
BRAID_DECLARED = '#include "crc32_braid_tbl.h"\n#include "arch_functions.h"\n'


def zlib_ng_library(scratch: Path) -> dict:
    """zlib-ng 2.2.5 (from python-zlib-ng's sdist on PyPI) with CRC32()'s small-string path
    put back as it was before upstream's win: a CMake project whose Google Benchmark
    executable is built only under its own option, WITH_BENCHMARKS."""
    files = _sdist(scratch, ZLIB_NG, ZLIB_NG_TREE)
    files.pop(".git", None)  # the submodule's link to python-zlib-ng's git directory
    fast = files[ZLIB_NG_FILE]
    assert isinstance(fast, str) and CRC_SMALL in fast, "zlib-ng 2.2.5's CRC32()"
    slow = fast.replace(CRC_SMALL, CRC_BRAID).replace(
        '#include "crc32_braid_tbl.h"\n', BRAID_DECLARED
    )
    return {
        "files": {**files, ZLIB_NG_FILE: slow},
        "init": ["--metric", ZLIB_NG_METRIC],
        "path": ZLIB_NG_FILE,
        "slow": slow,
        "win": fast,
        "null": slow.replace(
            "/* For lens < 64, crc32_braid method is faster.",
            "/* For lengths under 64, the braided method is faster.",
        ),
        # a leftover self-check: the braid computed twice
        "regression": slow.replace(
            CRC_BRAID.splitlines(keepends=True)[-1],
            "        return crc32 == PREFIX(crc32_braid)(crc32, buf, len) ? "
            "PREFIX(crc32_braid)(crc32, buf, len) : PREFIX(crc32_braid)(crc32, buf, len);\n",
        ),
        "truth": _google_benchmark_truth,
    }


def _google_benchmark_truth(repo: Path, spec: dict, rounds: int = 5) -> float:
    """The win's change measured with the project's Google Benchmark executable run directly,
    built in a folder of its own."""
    build = "cmake --build .truth-build --parallel > /dev/null"
    argv = [
        "bash", "-c",
        "cmake -S . -B .truth-build -DCMAKE_BUILD_TYPE=Release -DWITH_BENCHMARKS=ON > /dev/null"
        f" && {build} && ./.truth-build/test/benchmarks/benchmark_zlib --benchmark_format=json"
        " --benchmark_filter='^crc32/vpclmulqdq/16$' --benchmark_repetitions=5",
    ]  # fmt: skip
    try:
        return alternately(
            repo, spec, argv, lambda out: read_format("google-benchmark", out), rounds
        )
    finally:
        shutil.rmtree(repo / ".truth-build", ignore_errors=True)


# Names the first hour gives them.
PACKAGES = {
    "rust-crate": hex_crate,
    "python-upstream": cattrs_package,
    "cmake-library": zlib_ng_library,
}
