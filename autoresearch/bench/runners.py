"""Where build, bench, sentinel and checks commands run: the seam between the loop and a machine.

The loop's logic (patch checks, the decision rule, the journal, git) never runs a target's
command itself; a runner does, and hands back what `proc.run` returns. `LocalRunner` runs it
here, as a subprocess with a timeout and a process group. `SimulatedRunner` prints what a
model of the bench says instead, so that the calibration benchmark goes through the real
measurement path (interleaving, parsing, looks) on known truth, unmoved by the machine's load.
A session may be given another runner (`RunOptions.runner`: the suite's one runs the synthetic
target's scripts in-process, tests/inprocess.py). A bench host (cluster/host.py) runs the same
measurement with a `LocalRunner` of its own, or with the session's runner when it has one (a
job carries it).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .logcap import DEFAULT_CAP
from .proc import RunResult, run
from .sandbox import Sandbox, arm_caches, sandbox_for
from .staging import in_stage, staged

if TYPE_CHECKING:
    from ..config import Config
    from ..journal.placement import Confinement

# What a simulated bench prints for one run: metric -> value, given the arm's directory and
# the number of the run (0, 1, ...) since the runner was made or reset.
BenchModel = Callable[[Path, int], dict[str, float]]

__all__ = ["LocalRunner", "Runner", "SimulatedRunner", "machine_runner", "runners_from"]


class Runner(Protocol):
    def run(
        self,
        command: str,
        *,
        cwd: Path,
        log_path: Path,
        timeout_s: float,
        env: dict[str, str],
        stop: threading.Event | None,
        on_start: Callable[[int], None] | None,
        token: str | None,
        concurrent: bool = False,
        environ: dict[str, str] | None = None,
        handed: dict[int, int] | None = None,
        stdout_copy: Path | None = None,
    ) -> RunResult:
        """Run `command` in `cwd`, its output in `log_path` (its standard output alone also in
        `stdout_copy`), within `timeout_s`; a `concurrent` one runs beside others (an agent
        preparing the next proposal while the bench runs). `env` is added to `environ` (the
        user's environment when None); the command is handed the descriptors `handed` names,
        each at its reserved number (handed.py)."""
        ...

    def arm_state(self, cwd: Path) -> tuple[Path, ...]:
        """What a run in `cwd` may write beside its tree that a later run could read."""
        ...


class LocalRunner:
    """This machine, pinned to `cpus` (a taskset list) when given; each run confined to its
    own tree by `sandbox` when given (sandbox.py)."""

    def __init__(
        self, cpus: str = "", sandbox: Sandbox | None = None, max_log_bytes: int = DEFAULT_CAP
    ):
        self.cpus = cpus
        self.sandbox = sandbox
        self.max_log_bytes = max_log_bytes

    @classmethod
    def of(cls, config: Config, sandbox: Sandbox | None = None) -> LocalRunner:
        """This machine as `config` says: its CPUs, its cap on a run's log, `sandbox`."""
        return cls(config.bench.cpus, sandbox, int(config.session.max_run_log_mb * 1024 * 1024))

    def run(
        self,
        command: str,
        *,
        cwd: Path,
        env: dict[str, str],
        handed: dict[int, int] | None = None,
        **kwargs: Any,
    ) -> RunResult:
        if self.sandbox is None:
            return run(
                command, cwd=cwd, env=env, cpus=self.cpus, max_log_bytes=self.max_log_bytes,
                handed=handed, **kwargs,
            )  # fmt: skip
        # Under the one name every arm's runs have (staging.py): the mount table says nothing
        # of which arm a run is in.
        with staged(cwd, self.sandbox.one_path) as here:
            if here != cwd.resolve():
                env = {name: in_stage(value, cwd) for name, value in env.items()}
            confined = self.sandbox.wrap(here, env)
            try:
                return run(
                    command,
                    cwd=here,
                    env=confined.env,
                    cpus=self.cpus,
                    wrapper=confined.argv,
                    handed={**confined.handed, **(handed or {})},
                    max_log_bytes=self.max_log_bytes,
                    **kwargs,
                )
            finally:
                confined.close()

    def confinement(self, cwd: Path) -> Confinement | None:
        """How a run in `cwd` is confined; None when it is not."""
        return self.sandbox.describe(cwd) if self.sandbox is not None else None

    def arm_state(self, cwd: Path) -> tuple[Path, ...]:
        """What a run in `cwd` may write beside its tree and a later run could read: its
        arm's caches when confined (unconfined, it can write anywhere: the confinement docs,
        "what cannot hold")."""
        return (arm_caches(cwd.resolve()),) if self.sandbox is not None else ()


class SimulatedRunner:
    """No process: each command prints the METRIC lines `model(cwd, index)` gives."""

    def __init__(self, model: BenchModel):
        self.model = model
        self.index = 0

    def arm_state(self, cwd: Path) -> tuple[Path, ...]:
        return ()  # no process: nothing written beside the tree

    def run(self, command: str, *, cwd: Path, log_path: Path, **_: object) -> RunResult:
        values = self.model(Path(cwd), self.index)
        self.index += 1
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text("".join(f"METRIC {k}={v:.6f}\n" for k, v in values.items()))
        return RunResult(command, 0, False, False, 0.0, str(log_path), "")


# What makes the runner of a harness given none (None: this machine's, LocalRunner.of).
_factory: Callable[[Config, Sandbox | None], Runner] | None = None


def machine_runner(config: Config, sandbox: Sandbox | None) -> Runner:
    """The runner of a harness that was given none: this machine's processes, confined by
    `sandbox`; or what `runners_from` says while it holds."""
    if _factory is not None:
        return _factory(config, sandbox)
    return LocalRunner.of(config, sandbox)


@contextlib.contextmanager
def runners_from(factory: Callable[[Config, Sandbox | None], Runner]) -> Iterator[None]:
    """While it holds, every harness made without a runner of its own (a session's, the
    pre-flight's, `check`'s, a profile's) runs its commands through `factory(config, sandbox)`:
    how an embedding moves a whole command to another machine at once (the suite's in-process
    runs, a simulated bench)."""
    global _factory
    before, _factory = _factory, factory
    try:
        yield
    finally:
        _factory = before


@dataclass(frozen=True)
class Runners:
    """Where a harness's commands run: the main runner and the few that differ from it (each
    the main one where nothing differs), and why runs are not confined, when they are not."""

    main: Runner
    build: Runner  # `[sandbox] build_network`: the build alone reaches the network
    holdout: Runner  # the holdout's own runs alone see its files (sandbox.py, `secret`)
    profile: Runner  # its profiler may read the program it samples (seccomp.py)
    unconfined: str | None = None


def runners_for(config: Config, given: Runner | None = None) -> Runners:
    """The runners of a harness for `config`: `given` for everything (a simulated bench, the
    suite's in-process one), else this machine's, confined as the config says."""
    if given is not None:
        return Runners(given, given, given, given)
    sandbox, unconfined = sandbox_for(config)
    main = machine_runner(config, sandbox)
    if sandbox is None:
        return Runners(main, main, main, main, unconfined)
    build = main
    if config.sandbox.build_network and not sandbox.network:
        build = LocalRunner.of(config, replace(sandbox, network=True))
    holdout = main
    if sandbox.secret:
        own = replace(sandbox, secret=(), shown=(*sandbox.shown, *sandbox.secret))
        holdout = LocalRunner.of(config, own)
    profile = LocalRunner.of(config, replace(sandbox, tracing=True))
    return Runners(main, build, holdout, profile)
