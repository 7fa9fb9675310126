"""Scope globs: `*` stays in a directory, `**` spans directories, a directory covers its tree."""

import pytest

from autoresearch.repo.globs import matches_any


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        ("engine.go", "*.go", True),
        ("pkg/engine.go", "*.go", False),
        ("pkg/engine.go", "**/*.go", True),
        ("engine.go", "**/*.go", True),
        ("targets/pebble/engine.go", "targets/pebble/*.go", True),
        ("targets/pebble/sub/engine.go", "targets/pebble/*.go", False),
        ("targets/pebble/sub/engine.go", "targets/pebble/**", True),
        ("targets/pebble/go.mod", "**/go.mod", True),
        ("targets/pebble/bench", "targets/pebble/bench", True),
        ("targets/pebble/bench/x.go", "targets/pebble/bench", True),
        ("targets/pebble/benchmark.go", "targets/pebble/bench", False),
        ("a_test.go", "*_test.go", True),
        ("a.go", "[ab].go", True),
        ("c.go", "[!ab].go", True),
        ("a.go", "?.go", True),
        ("ab.go", "?.go", False),
    ],
)
def test_glob(path, pattern, expected):
    assert (matches_any(path, [pattern]) == pattern) is expected
