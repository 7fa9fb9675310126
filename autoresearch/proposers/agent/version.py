"""Which version of its CLI a preset runs, and whether the preset was tested with it.

The presets' flags are those each CLI documents at the version named here, proven end to end
with that version (tests/test_real_agents.py). A CLI's flags change between releases (Claude
Code's `--tools` is recent; Aider's analytics flags moved), so at the first proposal the loop
asks the CLI its version and says when it is outside the series a preset was tested with: an
older release, another major one, or for a 0.x CLI another minor one (semver promises nothing
there).
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ...bench.agent_sandbox import RELOCATING
from ...process.capture import capture

__all__ = ["TESTED", "CliVersion", "cli_version"]

# preset -> (its executable, the version the preset was tested with)
TESTED: dict[str, tuple[str, str]] = {
    "claude": ("claude", "2.1.197"),
    "codex": ("codex", "0.169.0"),
    "gemini": ("gemini", "0.61.0"),
    "opencode": ("opencode", "1.18.33"),
    "aider": ("aider", "0.86.2"),
}

_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True)
class CliVersion:
    """What the CLI said of its version; `note` when the preset was not tested with it."""

    executable: str
    version: str | None
    tested: str
    note: str | None

    def to_dict(self) -> dict[str, str | None]:
        return {"version": self.version, "tested": self.tested, "note": self.note}


def compatible(version: str, tested: str) -> bool:
    """Whether `version` is in `tested`'s series: the same major (the same minor for 0.x),
    not older than the tested minor release."""
    have, want = _parts(version), _parts(tested)
    if have is None or want is None:
        return False
    if have[0] != want[0] or (want[0] == 0 and have[1] != want[1]):
        return False
    return have[:2] >= want[:2]


def cli_version(preset: str, cwd: Path, env: dict[str, str]) -> CliVersion | None:
    """Ask the preset's CLI its version (`<cli> --version`); None for a preset with none. In a
    home of its own, thrown away after: a CLI that sets up its files (a session, a helper, a
    log) on any start leaves nothing in yours, nor where your variables move them."""
    if preset not in TESTED:
        return None
    executable, tested = TESTED[preset]
    with tempfile.TemporaryDirectory(prefix="autoresearch-version-") as scratch:
        home = {"HOME": scratch, "XDG_CACHE_HOME": str(Path(scratch, ".cache"))}
        home |= {var: str(Path(scratch, at)) for var, (at, _) in RELOCATING.items()}
        done = capture([executable, "--version"], cwd=cwd, env={**env, **home}, timeout_s=60)
    if done.code is None and not done.timed_out:  # it could not be started
        note = f"{executable} was not found on PATH: the {preset} preset cannot run"
        return CliVersion(executable, None, tested, note)
    said = (done.out + done.err).decode(errors="replace")
    found = _VERSION.search(said)
    if not done.ok or found is None:
        first = said.strip().splitlines()[:1]
        note = (
            f"`{executable} --version` said no version ({done.why()}"
            + (f": {first[0][:200]}" if first else "")
            + f"); the {preset} preset was tested with {tested}"
        )
        return CliVersion(executable, None, tested, note)
    version = found.group(0)
    caveat = None
    if not compatible(version, tested):
        series = f"{tested.split('.')[0]}.x" if not tested.startswith("0.") else tested[:-2]
        caveat = (
            f"{executable} {version} is outside the series the {preset} preset was tested with "
            f"({tested}, {series} from {'.'.join(tested.split('.')[:2])}.0): its flags or "
            "output may differ; a failed or refused proposal may come from that (set the "
            "proposer's `command` to run it your way)"
        )
    return CliVersion(executable, version, tested, caveat)


def _parts(version: str) -> tuple[int, int, int] | None:
    found = _VERSION.search(version)
    return tuple(int(x) for x in found.groups()) if found else None  # type: ignore[return-value]
