"""Path globs for scope and protection rules: `*` stays inside one directory, `**` spans any."""

import functools
import re

__all__ = ["compile_glob", "matches_any"]


@functools.lru_cache(maxsize=512)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """Translate a repository-relative glob (gitignore-like, anchored at the root) to a regex."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape("["))
                i += 1
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    # A pattern naming a directory covers everything below it.
    return re.compile("".join(out) + "(?:/.*)?")


def matches_any(path: str, patterns: tuple[str, ...] | list[str]) -> str | None:
    """The first pattern that matches `path`, or None."""
    for pattern in patterns:
        if compile_glob(pattern).fullmatch(path):
            return pattern
    return None
