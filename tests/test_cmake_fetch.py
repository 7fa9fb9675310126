"""A CMake project that fetches a dependency at configure time (FetchContent), as a new user
sets it up: confined builds have no network, so `init` writes a `[bench] fetch` that the loop
runs once before the night, unconfined, in the user's checkout, and each arm's configure reads
the dependency's sources from what it fetched, offline. Without the fetch the confined build
fails, saying it reached for the network: the night's builds really were offline.
"""

from __future__ import annotations

import io
import socket
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import edit_file, git, run_cli
from ecosystem_night import night, project, queue_win_and_null
from test_cmake_bench import FAST, FILES, NULL, SLOW

pytestmark = pytest.mark.slow  # C++ builds and Google Benchmark runs

# The dependency: a header-only library with a CMake target, served as a tarball.
TALLY = {
    "tally-1.0/CMakeLists.txt": (
        "cmake_minimum_required(VERSION 3.16)\nproject(tally CXX)\n"
        "add_library(tally INTERFACE)\ntarget_include_directories(tally INTERFACE include)\n"
    ),
    "tally-1.0/include/tally.h": "#pragma once\ninline long long tally_start() { return 0; }\n",
}


def _tarball(files: dict[str, str]) -> bytes:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        for name, text in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    return data.getvalue()


class _Registry(ThreadingHTTPServer):
    """The dependency's download site, on this machine's own address (not loopback: a run
    without the network has no route to it, as to a real one), counting its downloads."""

    def __init__(self) -> None:
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.connect(("192.0.2.1", 9))  # no packet sent: the route's source address
        address = probe.getsockname()[0]
        probe.close()
        self.tarball = _tarball(TALLY)
        self.downloads = 0
        super().__init__((address, 0), _Serve)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://{self.server_address[0]}:{self.server_address[1]}/tally-1.0.tar.gz"


class _Serve(BaseHTTPRequestHandler):
    server: _Registry

    def do_GET(self) -> None:
        self.server.downloads += 1
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.server.tarball)))
        self.end_headers()
        self.wfile.write(self.server.tarball)

    def log_message(self, *args) -> None:
        pass


def _fetching(url: str) -> dict[str, str]:
    """test_cmake_bench's project, its library built on a dependency it fetches from `url`."""
    files = dict(FILES)
    files["CMakeLists.txt"] = files["CMakeLists.txt"].replace(
        "add_library(summer src/summer.cpp)\n",
        "include(FetchContent)\n"
        f"FetchContent_Declare(tally URL {url})\n"
        "FetchContent_MakeAvailable(tally)\n"
        "add_library(summer src/summer.cpp)\n"
        "target_link_libraries(summer PUBLIC tally)\n",
    )
    files["src/summer.cpp"] = SLOW.replace(
        '#include "summer.h"\n', '#include "summer.h"\n#include "tally.h"\n'
    )
    return files


def test_a_cmake_project_fetching_at_configure_time_builds_confined_and_offline(tmp_path):
    registry = _Registry()
    try:
        repo = project(tmp_path, "summer", _fetching(registry.url))
        init = run_cli("init", "--metric", "bm_sumto_10000_ns", cwd=repo, timeout=600)
        assert init.returncode == 0, init.stderr
        assert "its FetchContent dependencies (tally) fetched before the night" in init.stdout
        text = (repo / "autoresearch.toml").read_text()
        assert 'fetch = "cmake -S . -B \\"$AUTORESEARCH_FETCHED/build\\"' in text
        assert '-DFETCHCONTENT_SOURCE_DIR_TALLY=\\"$AUTORESEARCH_FETCHED/deps/tally-src\\"' in text
        listed = registry.downloads  # init's listing fetched it once, into its own directory
        assert listed == 1
        assert not (repo / "build").exists()

        edit_file(
            repo / "autoresearch.toml",
            {"[bench]\n": '[bench]\nenv = { BENCHMARK_MIN_TIME = "0.05" }\n'},
        )
        src = _fetching(registry.url)["src/summer.cpp"]
        queue_win_and_null(
            repo,
            "src/summer.cpp",
            src,
            ("Sum in closed form", "n(n+1)/2: no vector, no loop",
             FAST.replace('#include "summer.h"\n', '#include "summer.h"\n#include "tally.h"\n')),
            ("Say what it sums", "none: a comment",
             NULL.replace('#include "summer.h"\n', '#include "summer.h"\n#include "tally.h"\n')),
        )  # fmt: skip

        # Without the fetch (the build configuring as it would by hand), the confined build
        # reaches for the download site and cannot.
        fetch_line = next(line for line in text.splitlines() if line.startswith("fetch = "))
        source = ' -DFETCHCONTENT_SOURCE_DIR_TALLY=\\"$AUTORESEARCH_FETCHED/deps/tally-src\\"'
        edit_file(repo / "autoresearch.toml", {fetch_line: f"# {fetch_line}", source: ""})
        git(repo, "commit", "-qam", "no fetch")
        refused = run_cli("check", cwd=repo, timeout=600)
        said = refused.stdout + refused.stderr
        assert refused.returncode != 0 and "the build fails on the unmodified code" in said, said
        assert "reached for the network" in said
        assert registry.downloads == listed  # no confined run reached it

        git(repo, "revert", "--no-edit", "HEAD")  # init's fetch and build, as it wrote them
        check = run_cli("check", cwd=repo, timeout=900)
        assert check.returncode == 0, check.stdout + check.stderr
        assert registry.downloads == listed + 1  # the fetch, in the user's checkout
        night(repo, "bm_sumto_10000_ns", "Sum in closed form", "Say what it sums")
        # The night's pre-flight fetched again, finding it all there; every arm built offline.
        assert registry.downloads == listed + 1
    finally:
        registry.shutdown()
        registry.server_close()
