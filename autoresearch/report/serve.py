"""`autoresearch serve`: the review page on localhost, rendered afresh for each request, so that
a browser left open on it follows a night (the page asks to be reloaded while one runs)."""

from __future__ import annotations

import contextlib
import http.server
from collections.abc import Callable

from ..errors import UserError

__all__ = ["serve_page"]


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
        say(f"serving the review at http://{name}:{bound}/ (Ctrl-C stops)")
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
