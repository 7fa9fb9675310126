"""The simulated executor the suite's loop runs drive: the synthetic target's scripts called
in this process, where a subprocess would only have added its start-up.

The loop hands its commands to a runner (autoresearch/bench/runners.py); this one runs
`./bench.py`, `./checks.py` and `./build.py` of the tree it is given by calling the `main` of
that tree's own script (read at every run: a patch that changes it is what runs) with the
environment the command would have had, its output in the log the loop reads. Whatever only a
process has, this executor hands to the real one (`LocalRunner`, the subprocess and its
timeout): a mode that hangs, sleeps, forks, tampers or prints a pid, any knob that asks for
one, another command, a script that is not the synthetic one.
"""

from __future__ import annotations

import functools
import io
import os
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import CodeType

from autoresearch.bench.environ import target_environ
from autoresearch.bench.proc import TOKEN_ENV, RunResult, tail_text
from autoresearch.bench.runners import LocalRunner

SCRIPTS = {"./bench.py": "bench.py", "./checks.py": "checks.py", "./build.py": "build.py"}
# The bench's modes that are a pure function of the tree and the environment (synthetic.py).
PURE_MODES = {"ok", "crash", "garbage", "nometric", "writes", "memo", "nobuild"}
# What asks for a process: a pid, time, a child, a file a run's timing is read from.
PROCESS_KNOBS = (
    "BENCH_SLEEP_S", "BENCH_STARTED", "BENCH_SPANS", "BENCH_DAEMON_DIR", "BENCH_CHILD_PID",
    "BUILD_SLEEP_S", "CHECKS_STARTED",
)  # fmt: skip


class InProcess:
    """A runner: the synthetic scripts in-process when they may be, else `real` (unconfined:
    the loop gives an executor of its own no sandbox)."""

    def __init__(self, real: LocalRunner | None = None) -> None:
        self.real = real or LocalRunner()
        self.calls = {"in_process": 0, "real": 0}

    def arm_state(self, cwd: Path) -> tuple[Path, ...]:
        return ()  # unconfined, as LocalRunner without a sandbox

    def run(
        self,
        command: str,
        *,
        cwd: Path,
        log_path: Path,
        env: dict[str, str],
        environ: dict[str, str] | None = None,
        token: str | None = None,
        **kwargs,
    ) -> RunResult:
        full = {**(target_environ() if environ is None else environ), **env}
        if token:
            full[TOKEN_ENV] = token
        main = self._main(command, Path(cwd), full)
        if main is None:
            self.calls["real"] += 1
            return self.real.run(
                command, cwd=cwd, log_path=log_path, env=env, environ=environ, token=token,
                **kwargs,
            )  # fmt: skip
        self.calls["in_process"] += 1
        return _call(main, command, full, log_path, kwargs.get("stdout_copy"))

    def _main(self, command: str, cwd: Path, env: dict[str, str]) -> Callable | None:
        """The tree's script's `main` when this command may run in-process, else None."""
        argv = command.split()
        name = SCRIPTS.get(argv[0]) if argv else None
        if name is None or argv[1:] not in ([], ["--sentinels"]):
            return None
        if any(env.get(knob) for knob in PROCESS_KNOBS):
            return None
        src = cwd / "src"
        if _read(src / "mode.txt", "ok") not in PURE_MODES or (src / "checks_sleep.txt").exists():
            return None
        script = cwd / name
        try:
            source = script.read_bytes()
        except OSError:
            return None
        if not os.access(script, os.X_OK) or b"python" not in source.split(b"\n", 1)[0]:
            return None
        return self._load(script, source)

    def _load(self, script: Path, source: bytes) -> Callable | None:
        code = _compiled(script.name, source)
        if code is None:
            return None
        namespace = {"__name__": "synthetic_script", "__file__": str(script)}
        exec(code, namespace)
        main = namespace.get("main")
        return main if callable(main) else None


@functools.lru_cache(maxsize=256)
def _compiled(name: str, source: bytes) -> CodeType | None:
    """A script's code, compiled once per text for every test's tree (a patched script is
    another text); None when it does not compile."""
    try:
        return compile(source, name, "exec")
    except SyntaxError:
        return None


def _call(
    main: Callable, command: str, env: dict[str, str], log_path: Path, copy: Path | None = None
) -> RunResult:
    """`main(argv, environ, out, err)` as the process would have run it: its exit code, its
    output and errors in the log (its output alone in `copy` too), an exception a traceback
    and exit code 1."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    try:
        code = main(command.split()[1:], env, out, err)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except Exception:  # what the interpreter would print before exiting 1
        err.write(traceback.format_exc())
        code = 1
    text = out.getvalue() + err.getvalue()
    log_path.write_text(text)
    if copy is not None:
        copy.write_text(out.getvalue())
    return RunResult(
        command=command,
        exit_code=code,
        timed_out=False,
        interrupted=False,
        duration_s=time.monotonic() - started,
        log_path=str(log_path),
        tail=tail_text(text),
    )


def _read(path: Path, default: str) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return default
