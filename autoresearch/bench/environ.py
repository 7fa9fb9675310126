"""The environment of the loop's own processes, and the user's, which the target's commands get.

numpy and scipy each load an OpenBLAS whose pool starts a thread per core, and an idle pool
thread spins for a while before it sleeps: some 0.2 s of a core for every `autoresearch`
process, for statistics on arrays of tens of numbers, taken from the bench on a busy machine.
The command line pins the pool to one thread before anything imports numpy, unless the user
chose a size, and says so in `PINNED_ENV`, which the processes it starts (a cluster's workers,
another `autoresearch`) inherit with the pin. A bench, build, check or agent gets the
environment as the user set it: `target_environ` leaves out what was pinned.

A build, bench, sentinel or checks run gets less: the toolchains' and the locale's variables
(`bench_environ`), what the config gives it (`[bench] env`, `[checks] env`, `--env`) and what
`[bench] pass_env` names, never the rest of the loop's environment, where a cloud key or an
agent's API token would reach the candidate's code and, printed, the journal.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import Path

from ..errors import UserError
from ..files import read_bounded

MAX_GO_ENV_BYTES = 64 * 1024

__all__ = [
    "BLAS_THREADS_ENV",
    "PINNED_ENV",
    "bench_environ",
    "go_env_file",
    "no_vcs_stamp",
    "offline_switches",
    "pin_blas_threads",
    "target_environ",
]

BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"
PINNED_ENV = "AUTORESEARCH_PINNED_ENV"  # the variables set for autoresearch's processes alone


def pin_blas_threads() -> None:
    """One BLAS thread for this process and the autoresearch processes it starts; the user's
    own setting, when there is one, stands."""
    if BLAS_THREADS_ENV in os.environ:
        return
    os.environ[BLAS_THREADS_ENV] = "1"
    os.environ[PINNED_ENV] = BLAS_THREADS_ENV


def target_environ() -> dict[str, str]:
    """os.environ as the user set it: what was pinned for autoresearch's processes left out."""
    pinned = {PINNED_ENV, *os.environ.get(PINNED_ENV, "").split(",")}
    return {key: value for key, value in os.environ.items() if key not in pinned}


# What a target's command gets of the user's environment without asking (the confinement docs,
# "The bench's environment"): the shell's basics, the locale, and the variables compilers and
# toolchains read. A name that looks like a secret is passed only when `[bench] pass_env` names
# it.
PASSED = frozenset(
    "PATH HOME USER LOGNAME SHELL LANG LANGUAGE TZ TERM TMPDIR HOSTNAME CI SOURCE_DATE_EPOCH "
    "LD_LIBRARY_PATH LIBRARY_PATH CPATH C_INCLUDE_PATH CPLUS_INCLUDE_PATH PKG_CONFIG_PATH "
    "CC CXX CPP AR LD CFLAGS CXXFLAGS CPPFLAGS LDFLAGS MAKEFLAGS JAVA_HOME JAVA_OPTS "
    "VIRTUAL_ENV CONDA_PREFIX PYTHONPATH PYTHONHOME PYTHONHASHSEED PYTHONDONTWRITEBYTECODE "
    "PYTHONUTF8 NODE_PATH NODE_OPTIONS RUSTFLAGS RUSTDOCFLAGS RUST_BACKTRACE RUST_LOG "
    "XDG_CACHE_HOME XDG_CONFIG_HOME XDG_DATA_HOME OMP_NUM_THREADS MKL_NUM_THREADS "
    f"{BLAS_THREADS_ENV}".split()
)
PASSED_PATTERNS = (
    "LC_*", "CARGO_*", "RUSTUP_*", "PIP_*", "UV_*", "npm_config_*", "CMAKE_*",
    "CCACHE_*", "SCCACHE_*", "ZIG_*", "MAVEN_*", "GRADLE_*",
)  # fmt: skip
_GO = re.compile(r"GO[A-Z0-9]+")  # Go's own (GOPATH, GOFLAGS, GO111MODULE), not GOOGLE_...
_SECRET = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|API_?KEY|PRIVATE|AUTH", re.IGNORECASE)


def bench_environ(passed: Sequence[str] = ()) -> dict[str, str]:
    """The user's environment as a target's command gets it: the allow-list above, and the
    names or patterns (`GRANTBENCH_*`) of `passed` (`[bench] pass_env`) whatever they are."""
    return {
        name: value
        for name, value in target_environ().items()
        if any(fnmatchcase(name, p) for p in passed) or _allowed(name)
    }


def _allowed(name: str) -> bool:
    if name in PASSED:
        return True
    toolchain = _GO.fullmatch(name) or any(fnmatchcase(name, p) for p in PASSED_PATTERNS)
    return bool(toolchain) and not _SECRET.search(name)


# Each toolchain's own switch to work from what it has cached, for runs that have no network
# (confined, without `[sandbox] network`): Cargo resolves an unlocked crate from the registry
# index `cargo fetch` left (instead of failing to reach it), Go fails fast on a module not in
# its cache, npm and pip install from their caches only.
OFFLINE = {
    "CARGO_NET_OFFLINE": "true",
    "GOPROXY": "off",
    "npm_config_offline": "true",
    "PIP_NO_INDEX": "1",
    "UV_OFFLINE": "1",
}


def offline_switches(given: dict[str, str]) -> dict[str, str]:
    """The toolchains' offline switches that `given` (the run's environment) does not set."""
    return {name: value for name, value in OFFLINE.items() if name not in given}


def go_env_file(given: dict[str, str]) -> Path:
    """Where Go keeps the settings `go env -w` writes (GOFLAGS, GOTOOLCHAIN, GOPROXY): `GOENV`,
    else its user config directory's."""
    if given.get("GOENV"):
        return Path(given["GOENV"])
    config = given.get("XDG_CONFIG_HOME") or os.path.join(given.get("HOME") or "~", ".config")
    return Path(os.path.expanduser(config)) / "go" / "env"


def no_vcs_stamp(given: dict[str, str]) -> dict[str, str]:
    """GOFLAGS with `-buildvcs=false`, for runs that do not see the repository: Go stamps a
    binary with what git says of the tree it finds a `.git` in, and fails the build when git
    cannot say ("error obtaining VCS status"). The flags you set stay, from the environment or
    `go env -w` (which the variable would otherwise override); none when they choose already."""
    flags = given.get("GOFLAGS")
    if not flags and given.get("GOENV") != "off":  # Go reads an empty one as unset
        flags = _go_env_setting(go_env_file(given), "GOFLAGS")
    flags = flags or ""
    if "-buildvcs" in flags:
        return {}
    return {"GOFLAGS": f"{flags} -buildvcs=false".strip()}


def _go_env_setting(path: Path, name: str) -> str | None:
    """One setting of Go's env file (`NAME=value` lines), or None."""
    try:
        text = read_bounded(path, MAX_GO_ENV_BYTES, "Go env file").decode("utf-8", "replace")
    except UserError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == name:
            return value.strip()
    return None
