"""`[bench] fetch`: what a build needs from the network, fetched before the night.

Confined runs have no network, and a CMake project that fetches its dependencies at configure
time (FetchContent) cannot build without it. The fetch runs before the night's first build
(`check` and `run`'s pre-flight): once, unconfined and with the network, in your checkout (your
code, never a candidate's: a candidate's build script must not run where it could reach the
network or write outside its tree), with `AUTORESEARCH_FETCHED` set to a directory of the
session's. Every build, bench and checks run then gets the same variable, and reads that
directory, read-only, where the sandbox shows it among what it otherwise hides.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..repo.state_dir import session_paths
from .proc import RunResult, run

if TYPE_CHECKING:
    import threading

    from ..config import Config

__all__ = ["FETCHED_ENV", "fetch", "fetched_dir", "fetched_env"]

FETCHED_ENV = "AUTORESEARCH_FETCHED"


def fetched_dir(config: Config) -> Path | None:
    """Where the fetch leaves what it fetched (the session's state); None without a fetch."""
    return session_paths(config).root / "fetched" if config.bench.fetch else None


def fetched_env(config: Config) -> dict[str, str]:
    """The variable every run of the config gets: where the fetch left what it fetched."""
    where = fetched_dir(config)
    return {FETCHED_ENV: str(where)} if where is not None else {}


def fetch(
    config: Config,
    env: dict[str, str],
    environ: dict[str, str],
    log: Path,
    stop: threading.Event | None = None,
) -> RunResult | None:
    """Run `[bench] fetch` in your checkout, unconfined, with the network, with the runs' own
    `env` (fetched_env's variable among it) added to `environ`; None without one."""
    if not config.bench.fetch:
        return None
    Path(env[FETCHED_ENV]).mkdir(parents=True, exist_ok=True)
    return run(
        config.bench.fetch,
        cwd=config.repo_path,
        log_path=log,
        timeout_s=config.bench.timeout_s,
        env=env,
        environ=environ,
        stop=stop,
        max_log_bytes=int(config.session.max_run_log_mb * 1024 * 1024),
    )
