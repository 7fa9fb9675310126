"""What a patch names, and the rules that refuse it."""

from pathlib import Path

from conftest import unified_patch

from autoresearch.repo.patchcheck import check_paths, patch_paths


def check(patch, paths, tmp_path, include=("src/**",), protect=("src/keep.txt",), binary=False):
    return check_paths(
        patch,
        paths,
        worktree=tmp_path,
        include=list(include),
        protect=list(protect),
        allow_binary=binary,
    )


def test_paths_from_headers_including_renames_and_new_files():
    patch = unified_patch("src/a.txt", "1\n", "2\n") + unified_patch("src/new.txt", "", "x\n")
    patch += "diff --git a/src/old b/src/moved\nsimilarity index 100%\nrename from src/old\n"
    patch += "rename to src/moved\n"
    assert patch_paths(patch) == ["src/a.txt", "src/new.txt", "src/old", "src/moved"]


def test_quoted_paths_are_unquoted():
    patch = '--- "a/src/sp\\303\\251cial.txt"\n+++ "b/src/sp\\303\\251cial.txt"\n'
    assert patch_paths(patch) == ["src/spécial.txt"]


def test_allowed_patch(tmp_path):
    assert check("", ["src/a.txt"], tmp_path) is None


def test_refusals(tmp_path: Path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "out").symlink_to("/tmp")
    cases = {
        "/etc/passwd": "absolute path",
        "src/../../x": "escapes the repository",
        ".git/config": "inside .git",
        "src/keep.txt": "protected (matches 'src/keep.txt')",
        "README": "outside the scope (src/**)",
        "src/out/x": "goes through the symbolic link src/out",
    }
    for path, reason in cases.items():
        problem = check("", [path], tmp_path)
        assert problem is not None and problem.kind == "scope_violation", path
        assert reason in problem.message, (path, problem.message)


def test_binary_and_symlink_content(tmp_path):
    binary = "diff --git a/src/x b/src/x\nGIT binary patch\nliteral 3\n"
    assert "binary" in check(binary, ["src/x"], tmp_path).message
    assert check(binary, ["src/x"], tmp_path, binary=True) is None
    link = "diff --git a/src/l b/src/l\nnew file mode 120000\n"
    assert "symbolic link" in check(link, ["src/l"], tmp_path).message


def test_empty_patch_is_an_apply_failure(tmp_path):
    problem = check("just words", [], tmp_path)
    assert problem.kind == "apply_failed"


def test_the_tests_and_their_configuration_are_protected_unless_allowed(tmp_path):
    """A patch that deletes an assert, or a root conftest.py that skips every test, would pass
    the checks it edits: the tests are protected by default, editable only when allowed."""
    from autoresearch.config import load_config

    config = tmp_path / "autoresearch.toml"
    config.write_text('[metric]\nname = "t_ms"\n')
    for path in (
        "conftest.py",
        "pkg/tests/test_core.py",
        "test_speed.py",
        "store/store_test.go",
        "web/app.spec.ts",
        "pytest.ini",
    ):
        problem = check_paths(
            unified_patch(path, "a\n", "b\n"),
            [path],
            worktree=tmp_path,
            include=["**"],
            protect=load_config(config).protected_globs(),
            allow_binary=False,
        )
        assert problem is not None and "protected" in problem.message, path
    config.write_text('[metric]\nname = "t_ms"\n[scope]\nallow_tests = true\n')
    allowed = load_config(config).protected_globs()
    assert (
        check_paths(
            unified_patch("conftest.py", "a\n", "b\n"),
            ["conftest.py"],
            worktree=tmp_path,
            include=["**"],
            protect=allowed,
            allow_binary=False,
        )
        is None
    )
