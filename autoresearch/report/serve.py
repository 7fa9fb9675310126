"""`autoresearch serve`: the review page on localhost, made afresh whenever what it shows
changed, so that a browser left open on it follows a night (the page asks to be reloaded while
one runs) without a page's plots drawn again beside the bench at every reload."""

from __future__ import annotations

import contextlib
import http.server
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from ..errors import UserError

__all__ = ["files_signature", "made_when_changed", "serve_page"]


def serve_page(render: Callable[[], str], host: str, port: int, say: Callable[[str], None]) -> None:
    """Serve `render()` at / until interrupted; a page that cannot be made is answered with the
    one-line error (a 500), and the server goes on."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] not in ("/", "/index.html"):
                self._answer(404, "<p>not found: the review is at /</p>")
                return
            try:
                self._answer(200, render())
            except UserError as exc:
                self._answer(500, f"<p>error: {_escape(str(exc))}</p>")

        def _answer(self, code: int, body: str) -> None:
            data = body.encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args) -> None:
            pass  # a line per reload would bury what the terminal is for

    try:
        server = http.server.HTTPServer((host, port), Handler)
    except OSError as exc:
        raise UserError(f"cannot serve on {host}:{port}: {exc.strerror}") from None
    with server:
        name, bound = server.server_address[:2]
        say(f"serving the review at http://{name!s}:{bound}/ (Ctrl-C stops)")
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()


def made_when_changed(
    make: Callable[[tuple], str], inputs: Callable[[], tuple]
) -> Callable[[], str]:
    """`make(inputs())`, called again only when `inputs()` (what its page is made of) changed
    since the page it made last; that page otherwise."""
    made: dict[tuple, str] = {}

    def render() -> str:
        key = inputs()
        if key not in made:
            page = make(key)  # raises before the old page is forgotten: the next request tries
            made.clear()
            made[key] = page
        return made[key]

    return render


def files_signature(paths: Iterable[Path | None]) -> tuple:
    """What the file system says of `paths` (a file's size, time and inode, a directory's by its
    entries', None for one absent): equal signatures, the same page to serve."""
    return tuple(_stat(path) for path in paths)


def _stat(path: Path | None) -> tuple | None:
    try:
        found = os.stat(path) if path is not None else None
        if found is None or not stat.S_ISDIR(found.st_mode):
            return found and (found.st_size, found.st_mtime_ns, found.st_ino)
        with os.scandir(path) as entries:
            inside = sorted((entry.name, _stat(Path(entry.path))) for entry in entries)
    except OSError:  # gone between the look and the read: as absent
        return None
    return (found.st_size, found.st_mtime_ns, found.st_ino), tuple(inside)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
