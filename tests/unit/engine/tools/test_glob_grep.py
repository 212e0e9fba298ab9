"""Glob and Grep: the pattern language, recursion, ordering, caps, filters and confinement."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from apps.engine.errors import ToolError
from apps.engine.tools.base import Concurrency
from apps.engine.tools.builtin.glob import GlobTool, compile_glob
from apps.engine.tools.builtin.grep import GrepTool
from apps.engine.tools.registry import ToolRegistry

from .conftest import Run

GLOB = GlobTool()
GREP = GrepTool()


def _tree(workspace: Path, files: dict[str, str]) -> None:
    """Create ``files``; each gets a distinct mtime, later entries newer."""
    for i, (name, text) in enumerate(files.items()):
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        os.utime(path, ns=(1_700_000_000_000_000_000 + i * 10**9,) * 2)


@pytest.mark.parametrize(("pattern", "path", "matches"), [
    ("*.py", "a.py", True),
    ("*.py", "src/a.py", False),
    ("**/*.py", "a.py", True),
    ("**/*.py", "src/deep/a.py", True),
    ("src/**/*.py", "src/a.py", True),
    ("src/**/*.py", "src/x/y/a.py", True),
    ("src/**/*.py", "lib/a.py", False),
    ("src/**", "src/x/y", True),
    ("**", "anything/at/all", True),
    ("*.{ts,tsx}", "a.tsx", True),
    ("*.{ts,tsx}", "a.js", False),
    ("{src,lib}/**/*.{c,h}", "lib/x/a.h", True),
    ("a?c", "abc", True),
    ("a?c", "a/c", False),
    ("[abc].txt", "b.txt", True),
    ("[!abc].txt", "b.txt", False),
    ("[!abc].txt", "d.txt", True),
    ("*", ".hidden", True),
    ("a**b", "axxb", True),
    ("a**b", "ax/xb", False),
    ("{a,b", "{a,b", True),
    ("[ab", "[ab", True),
    ("\\*.txt", "*.txt", True),
    ("\\*.txt", "a.txt", False),
    ("a.b", "axb", False),
    ("a+(b)", "a+(b)", True),
])
def test_glob_language(pattern: str, path: str, matches: bool) -> None:
    assert (compile_glob(pattern).match(path) is not None) is matches


async def test_glob_recurses_and_lists_newest_first(run: Run, workspace: Path) -> None:
    _tree(workspace, {"old.py": "", "src/mid.py": "", "src/deep/new.py": "", "notes.txt": ""})
    out = await run(GLOB, pattern="**/*.py")
    assert out.content == "src/deep/new.py\nsrc/mid.py\nold.py"


async def test_glob_ties_in_mtime_are_broken_by_path(run: Run, workspace: Path) -> None:
    for name in ["b.txt", "a.txt", "c.txt"]:
        (workspace / name).write_text("")
        os.utime(workspace / name, ns=(10**18, 10**18))
    assert (await run(GLOB, pattern="*.txt")).content == "a.txt\nb.txt\nc.txt"


async def test_glob_top_level_pattern_does_not_recurse(run: Run, workspace: Path) -> None:
    _tree(workspace, {"a.py": "", "src/b.py": ""})
    assert (await run(GLOB, pattern="*.py")).content == "a.py"


async def test_glob_path_argument_and_results_relative_to_workspace(run: Run,
                                                                    workspace: Path) -> None:
    _tree(workspace, {"a.py": "", "src/b.py": "", "src/pkg/c.py": ""})
    out = await run(GLOB, pattern="*.py", path="src")
    assert out.content == "src/b.py"
    out = await run(GLOB, pattern="**/*.py", path="src")
    assert out.content == "src/pkg/c.py\nsrc/b.py"


async def test_glob_absolute_pattern_inside_the_workspace(run: Run, workspace: Path) -> None:
    _tree(workspace, {"src/a.py": "", "b.py": ""})
    assert (await run(GLOB, pattern=f"{workspace}/src/*.py")).content == "src/a.py"


async def test_glob_skips_git_and_confab_internals(run: Run, workspace: Path) -> None:
    _tree(workspace, {".git/config": "", ".confab/results/c.txt": "", "keep.txt": "",
                      ".env": ""})
    assert (await run(GLOB, pattern="**/*")).content == ".env\nkeep.txt"


async def test_glob_caps_results_with_a_note(run: Run, workspace: Path) -> None:
    _tree(workspace, {f"f{i:03}.txt": "" for i in range(105)})
    out = await run(GLOB, pattern="*.txt")
    assert isinstance(out.content, str)
    lines = out.content.splitlines()
    assert lines[0] == "f104.txt" and lines[99] == "f005.txt"
    assert lines[-1] == ("[Showing the 100 most recently modified of 105 matching files. "
                         "Use a narrower pattern or path to see the others.]")


async def test_glob_no_match(run: Run, workspace: Path) -> None:
    assert (await run(GLOB, pattern="**/*.rs")).content == "No files found matching '**/*.rs'."
    out = await run(GLOB, pattern="missing/dir/*.rs")
    assert out.content == "No files found matching 'missing/dir/*.rs'."


async def test_glob_does_not_leave_the_workspace(run: Run, workspace: Path,
                                                 outside: Path) -> None:
    (workspace / "out").symlink_to(outside)
    (workspace / "leak.txt").symlink_to(outside / "secret.txt")
    (workspace / "mine.txt").write_text("")
    assert (await run(GLOB, pattern="**/*.txt")).content == "mine.txt"
    with pytest.raises(ToolError, match="is outside the workspace"):
        await run(GLOB, pattern="../outside/*.txt")
    with pytest.raises(ToolError, match="is outside the workspace"):
        await run(GLOB, pattern=f"{outside}/*.txt")
    with pytest.raises(ToolError, match="is outside the workspace"):
        await run(GLOB, pattern="*.txt", path="..")
    with pytest.raises(ToolError, match="through a symbolic link"):
        await run(GLOB, pattern="*.txt", path="out")
    with pytest.raises(ToolError, match="'..' may not follow a wildcard"):
        await run(GLOB, pattern="*/../../outside/*.txt")


async def test_glob_bad_arguments(run: Run, workspace: Path) -> None:
    (workspace / "f.txt").write_text("")
    with pytest.raises(ToolError, match="The pattern is empty"):
        await run(GLOB, pattern=" ")
    with pytest.raises(ToolError, match="Directory not found: nope"):
        await run(GLOB, pattern="*", path="nope")
    with pytest.raises(ToolError, match="f.txt is a file, not a directory"):
        await run(GLOB, pattern="*", path="f.txt")


# --- Grep --------------------------------------------------------------------------------------

CODE = {
    "app.py": "import os\n\ndef main():\n    return os.getcwd()\n",
    "src/util.py": "def helper():\n    pass\n\ndef main_loop():\n    pass\n",
    "src/web/page.ts": "export function main() {}\n",
    "README.md": "Run main() to start.\n",
}


async def test_grep_content_lines(run: Run, workspace: Path) -> None:
    _tree(workspace, CODE)
    out = await run(GREP, pattern=r"def \w+\(")
    assert out.content == (
        "app.py:3:def main():\n"
        "src/util.py:1:def helper():\n"
        "src/util.py:4:def main_loop():"
    )


async def test_grep_glob_without_slash_matches_names_at_any_depth(run: Run,
                                                                  workspace: Path) -> None:
    _tree(workspace, CODE)
    out = await run(GREP, pattern="main", glob="*.{ts,md}")
    assert out.content == ("README.md:1:Run main() to start.\n"
                           "src/web/page.ts:1:export function main() {}")


async def test_grep_glob_with_slash_matches_relative_paths(run: Run, workspace: Path) -> None:
    _tree(workspace, CODE)
    out = await run(GREP, pattern="main", glob="src/**/*.py")
    assert out.content == "src/util.py:4:def main_loop():"


async def test_grep_path_limits_the_search(run: Run, workspace: Path) -> None:
    _tree(workspace, CODE)
    out = await run(GREP, pattern="main", path="src", glob="*.ts")
    assert out.content == "src/web/page.ts:1:export function main() {}"
    out = await run(GREP, pattern="pass", path="src/util.py")
    assert out.content == "src/util.py:2:    pass\nsrc/util.py:5:    pass"


async def test_grep_output_modes(run: Run, workspace: Path) -> None:
    _tree(workspace, CODE)
    out = await run(GREP, pattern="main", output_mode="files_with_matches")
    assert out.content == "README.md\napp.py\nsrc/util.py\nsrc/web/page.ts"
    out = await run(GREP, pattern="pass|os", output_mode="count")
    assert out.content == "app.py:2\nsrc/util.py:2"


async def test_grep_case_insensitive_inline_flag(run: Run, workspace: Path) -> None:
    _tree(workspace, {"a.txt": "Hello\nhello\nHELLO\nbye\n"})
    out = await run(GREP, pattern="(?i)hello", output_mode="count")
    assert out.content == "a.txt:3"


async def test_grep_invalid_regex_is_a_clear_error(run: Run, workspace: Path) -> None:
    _tree(workspace, CODE)
    with pytest.raises(ToolError, match=r"Invalid regular expression 'main\(': missing \) "
                                        r".* Python `re` syntax"):
        await run(GREP, pattern="main(")


async def test_a_catastrophic_pattern_is_stopped_with_a_clear_error(
        run: Run, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # (a+)+$ against a long run of a's and a "!" backtracks heavily; `re` would
    # hold the process for minutes. The budget is shortened so the test stays quick.
    monkeypatch.setattr("apps.engine.tools.builtin.grep.SEARCH_BUDGET_S", 0.3)
    _tree(workspace, {"r.txt": "a" * 5000 + "!\n"})
    with pytest.raises(ToolError, match=r"took longer than 0.3 s .* backtracks"):
        await run(GREP, pattern="(a+)+$")


async def test_grep_skips_binary_files_and_internals(run: Run, workspace: Path) -> None:
    _tree(workspace, {"text.txt": "needle\n", ".confab/results/r.txt": "needle\n",
                      ".git/ORIG": "needle\n"})
    (workspace / "blob.bin").write_bytes(b"needle\x00\x01")
    assert (await run(GREP, pattern="needle")).content == "text.txt:1:needle"


async def test_grep_reads_non_utf8_text_with_replacement(run: Run, workspace: Path) -> None:
    (workspace / "latin1.txt").write_bytes("café needle\n".encode("latin-1"))
    assert (await run(GREP, pattern="needle")).content == "latin1.txt:1:caf\ufffd needle"


async def test_grep_caps_output_with_a_note(run: Run, workspace: Path) -> None:
    _tree(workspace, {"many.txt": "hit\n" * 250})
    out = await run(GREP, pattern="hit")
    assert isinstance(out.content, str)
    lines = out.content.splitlines()
    assert lines[199] == "many.txt:200:hit"
    assert lines[-1] == ("[Results stop at 200 lines; there are more. Narrow the pattern, "
                         "path or glob.]")
    assert len(lines) == 202


async def test_grep_clips_long_lines(run: Run, workspace: Path) -> None:
    _tree(workspace, {"min.js": "x" * 1000 + "needle\n"})
    out = await run(GREP, pattern="needle")
    assert out.content == "min.js:1:" + "x" * 300 + "… [706 more characters]"


async def test_grep_no_match_and_bad_arguments(run: Run, workspace: Path) -> None:
    _tree(workspace, CODE)
    assert (await run(GREP, pattern="zebra")).content == "No matches found for 'zebra'."
    with pytest.raises(ToolError, match="Path not found: nope"):
        await run(GREP, pattern="x", path="nope")
    with pytest.raises(ToolError, match="The glob is empty"):
        await run(GREP, pattern="x", glob="")


async def test_grep_does_not_leave_the_workspace(run: Run, workspace: Path,
                                                 outside: Path) -> None:
    (workspace / "out").symlink_to(outside)
    (workspace / "leak.txt").symlink_to(outside / "secret.txt")
    (workspace / "alias.txt").symlink_to("mine.txt")
    (workspace / "mine.txt").write_text("secret of mine\n")
    out = await run(GREP, pattern="secret")
    assert out.content == "alias.txt:1:secret of mine\nmine.txt:1:secret of mine"
    with pytest.raises(ToolError, match="through a symbolic link"):
        await run(GREP, pattern="secret", path="leak.txt")
    with pytest.raises(ToolError, match="through a symbolic link"):
        await run(GREP, pattern="secret", path="out")
    with pytest.raises(ToolError, match="is outside the workspace"):
        await run(GREP, pattern="secret", path="../outside")
    with pytest.raises(ToolError, match="is outside the workspace"):
        await run(GREP, pattern="secret", path=str(outside))


def test_search_tools_run_beside_others_and_have_strict_schemas() -> None:
    registry = ToolRegistry([GLOB, GREP])
    for tool in (GLOB, GREP):
        assert tool.spec.concurrency is Concurrency.ALWAYS
        assert not tool.spec.requires_approval
    assert registry.validate("Glob", {"pattern": "*", "path": "."}) is None
    assert registry.validate("Glob", {}) is not None
    assert registry.validate("Grep", {"pattern": "x", "glob": "*.py",
                                      "output_mode": "count"}) is None
    assert registry.validate("Grep", {"pattern": "x", "output_mode": "lines"}) is not None
    assert "Additional properties" in (registry.validate("Grep", {"pattern": "x", "-i": True})
                                       or "")
