"""Write and Edit: creation and overwrite, exact unique matching, and no write ever lands
outside the workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.engine.errors import ToolError
from apps.engine.tools.base import Concurrency
from apps.engine.tools.builtin.edit import EditTool
from apps.engine.tools.builtin.write import WriteTool
from apps.engine.tools.registry import ToolRegistry

from .conftest import Run

WRITE = WriteTool()
EDIT = EditTool()


# --- Write -------------------------------------------------------------------------------------


async def test_write_creates_the_file_and_its_parents(run: Run, workspace: Path) -> None:
    out = await run(WRITE, file_path="a/b/new.txt", content="héllo\n")
    assert out.content == "Created a/b/new.txt (7 bytes)."
    assert (workspace / "a" / "b" / "new.txt").read_text() == "héllo\n"


async def test_write_overwrites_and_says_updated(run: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a much longer original content\n")
    out = await run(WRITE, file_path="a.txt", content="short")
    assert out.content == "Updated a.txt (5 bytes)."
    assert (workspace / "a.txt").read_text() == "short"


async def test_write_empty_content(run: Run, workspace: Path) -> None:
    out = await run(WRITE, file_path="empty.txt", content="")
    assert out.content == "Created empty.txt (0 bytes)."
    assert (workspace / "empty.txt").read_bytes() == b""


async def test_write_with_absolute_path_inside(run: Run, workspace: Path) -> None:
    out = await run(WRITE, file_path=str(workspace / "abs.txt"), content="x")
    assert out.content == "Created abs.txt (1 bytes)."


async def test_write_through_a_link_inside_updates_its_target(run: Run,
                                                              workspace: Path) -> None:
    (workspace / "real.txt").write_text("old")
    (workspace / "alias.txt").symlink_to("real.txt")
    out = await run(WRITE, file_path="alias.txt", content="new")
    assert out.content == "Updated real.txt (3 bytes)."
    assert (workspace / "real.txt").read_text() == "new"
    assert (workspace / "alias.txt").is_symlink()


async def test_write_to_a_directory_is_an_error(run: Run, workspace: Path) -> None:
    (workspace / "d").mkdir()
    with pytest.raises(ToolError, match="d is a directory; give the path of a file"):
        await run(WRITE, file_path="d", content="x")


async def test_write_below_a_file_is_an_error(run: Run, workspace: Path) -> None:
    (workspace / "f").write_text("x")
    with pytest.raises(ToolError, match="'f' is a file, not a directory"):
        await run(WRITE, file_path="f/child.txt", content="x")


async def test_write_through_a_file_link_to_outside_is_refused(
        run: Run, workspace: Path, outside: Path) -> None:
    (workspace / "leak.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError, match="outside the workspace through a symbolic link"):
        await run(WRITE, file_path="leak.txt", content="pwned")
    assert (outside / "secret.txt").read_text() == "top secret\n"


async def test_write_through_a_dangling_link_to_outside_creates_nothing(
        run: Run, workspace: Path, outside: Path) -> None:
    (workspace / "trap.txt").symlink_to(outside / "planted.txt")
    with pytest.raises(ToolError, match="through a symbolic link"):
        await run(WRITE, file_path="trap.txt", content="pwned")
    assert not (outside / "planted.txt").exists()


async def test_write_into_a_directory_link_to_outside_is_refused(
        run: Run, workspace: Path, outside: Path) -> None:
    (workspace / "out").symlink_to(outside)
    with pytest.raises(ToolError, match="through a symbolic link"):
        await run(WRITE, file_path="out/sub/new.txt", content="pwned")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


@pytest.mark.parametrize("path", ["../escape.txt", "sub/../../escape.txt"])
async def test_write_with_dot_dot_escape_is_refused(run: Run, tmp_path: Path,
                                                    path: str) -> None:
    with pytest.raises(ToolError, match="is outside the workspace"):
        await run(WRITE, file_path=path, content="x")
    assert not (tmp_path / "escape.txt").exists()


async def test_write_to_an_absolute_path_outside_is_refused(run: Run, outside: Path) -> None:
    with pytest.raises(ToolError, match="is outside the workspace"):
        await run(WRITE, file_path=str(outside / "new.txt"), content="x")
    assert not (outside / "new.txt").exists()


# --- Edit --------------------------------------------------------------------------------------


async def test_edit_replaces_a_unique_match_and_shows_the_change(run: Run,
                                                                 workspace: Path) -> None:
    source = "".join(f"line {i}\n" for i in range(1, 11))
    (workspace / "a.txt").write_text(source)
    out = await run(EDIT, file_path="a.txt", old_string="line 5\n", new_string="five\nFIVE\n")
    assert (workspace / "a.txt").read_text() == source.replace("line 5\n", "five\nFIVE\n")
    assert out.content == (
        "Edited a.txt: replaced 1 occurrence.\n"
        "     2\tline 2\n     3\tline 3\n     4\tline 4\n     5\tfive\n     6\tFIVE\n"
        "     7\tline 6\n     8\tline 7\n     9\tline 8"
    )


async def test_edit_of_the_last_line_shows_no_phantom_line(run: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\nb\n")
    out = await run(EDIT, file_path="a.txt", old_string="b", new_string="c")
    assert out.content == "Edited a.txt: replaced 1 occurrence.\n     1\ta\n     2\tc"


async def test_edit_can_delete_text(run: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_text("keep\ndrop me\nkeep too\n")
    await run(EDIT, file_path="a.txt", old_string="drop me\n", new_string="")
    assert (workspace / "a.txt").read_text() == "keep\nkeep too\n"


async def test_edit_not_found_is_a_clear_error(run: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_text("def main():\n    pass\n")
    with pytest.raises(ToolError, match="old_string was not found in a.txt. It must match the "
                                        "file exactly, including whitespace"):
        await run(EDIT, file_path="a.txt", old_string="def mian():", new_string="x")
    assert (workspace / "a.txt").read_text() == "def main():\n    pass\n"


async def test_edit_not_found_explains_read_line_prefixes(run: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\nbeta\n")
    with pytest.raises(ToolError, match="line-number prefixes"):
        await run(EDIT, file_path="a.txt", old_string="     2\tbeta", new_string="gamma")


async def test_edit_not_found_mentions_a_whitespace_only_difference(run: Run,
                                                                    workspace: Path) -> None:
    (workspace / "a.txt").write_text("if x:\n    return 1\n")
    with pytest.raises(ToolError, match="matches when leading and trailing whitespace"):
        await run(EDIT, file_path="a.txt", old_string="  return 1  ", new_string="return 2")


async def test_edit_ambiguous_match_says_how_many_and_what_to_do(run: Run,
                                                                 workspace: Path) -> None:
    (workspace / "a.txt").write_text("x = 1\nx = 1\nx = 1\n")
    with pytest.raises(ToolError, match="old_string occurs 3 times in a.txt. Add surrounding "
                                        "lines .* or set replace_all to true"):
        await run(EDIT, file_path="a.txt", old_string="x = 1", new_string="x = 2")
    assert (workspace / "a.txt").read_text() == "x = 1\nx = 1\nx = 1\n"


async def test_edit_replace_all_replaces_every_occurrence(run: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_text("foo(1)\nbar\nfoo(2)\nfoo(3)\n")
    out = await run(EDIT, file_path="a.txt", old_string="foo", new_string="baz",
                    replace_all=True)
    assert (workspace / "a.txt").read_text() == "baz(1)\nbar\nbaz(2)\nbaz(3)\n"
    assert isinstance(out.content, str)
    assert out.content.startswith("Edited a.txt: replaced 3 occurrences.\n     1\tbaz(1)")


async def test_edit_replace_all_with_a_single_match_is_fine(run: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_text("only once\n")
    out = await run(EDIT, file_path="a.txt", old_string="once", new_string="twice",
                    replace_all=True)
    assert isinstance(out.content, str) and "replaced 1 occurrence." in out.content


async def test_edit_identical_strings_is_an_error(run: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_text("same\n")
    with pytest.raises(ToolError, match="old_string and new_string are identical"):
        await run(EDIT, file_path="a.txt", old_string="same", new_string="same")


async def test_edit_empty_old_string_points_to_write(run: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x\n")
    with pytest.raises(ToolError, match="old_string is empty.*use Write"):
        await run(EDIT, file_path="a.txt", old_string="", new_string="y")


async def test_edit_missing_file(run: Run) -> None:
    with pytest.raises(ToolError, match="^File not found: missing.py$"):
        await run(EDIT, file_path="missing.py", old_string="a", new_string="b")


async def test_edit_binary_file_is_refused(run: Run, workspace: Path) -> None:
    (workspace / "a.bin").write_bytes(b"abc\x00def")
    with pytest.raises(ToolError, match="a.bin looks like a binary file"):
        await run(EDIT, file_path="a.bin", old_string="abc", new_string="xyz")


async def test_edit_keeps_crlf_line_endings(run: Run, workspace: Path) -> None:
    (workspace / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await run(EDIT, file_path="win.txt", old_string="one\ntwo\n", new_string="1\n2\n")
    assert (workspace / "win.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_edit_mixed_line_endings_match_exactly(run: Run, workspace: Path) -> None:
    (workspace / "mixed.txt").write_bytes(b"a\r\nb\nc\n")
    with pytest.raises(ToolError, match="not found"):
        await run(EDIT, file_path="mixed.txt", old_string="a\nb", new_string="x")
    await run(EDIT, file_path="mixed.txt", old_string="b\nc", new_string="x")
    assert (workspace / "mixed.txt").read_bytes() == b"a\r\nx\n"


async def test_edit_long_change_snippet_is_capped(run: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_text("start\n")
    new = "".join(f"n{i}\n" for i in range(100))
    out = await run(EDIT, file_path="a.txt", old_string="start\n", new_string=new)
    assert isinstance(out.content, str)
    assert out.content.endswith("[... the change continues to line 100]")
    assert len(out.content.splitlines()) == 42


async def test_edit_through_a_link_to_outside_is_refused(run: Run, workspace: Path,
                                                         outside: Path) -> None:
    (workspace / "leak.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError, match="outside the workspace through a symbolic link"):
        await run(EDIT, file_path="leak.txt", old_string="top", new_string="no")
    assert (outside / "secret.txt").read_text() == "top secret\n"


async def test_edit_outside_with_dot_dot_is_refused(run: Run, outside: Path) -> None:
    with pytest.raises(ToolError, match="is outside the workspace"):
        await run(EDIT, file_path="../outside/secret.txt", old_string="top", new_string="no")
    assert (outside / "secret.txt").read_text() == "top secret\n"


def test_writing_tools_run_alone_and_need_approval() -> None:
    for tool in (WRITE, EDIT):
        assert tool.spec.concurrency is Concurrency.NEVER
        assert tool.spec.requires_approval
        assert not tool.is_concurrency_safe({})


def test_write_and_edit_schemas_are_strict() -> None:
    registry = ToolRegistry([WRITE, EDIT])
    assert registry.validate("Write", {"file_path": "a", "content": "b"}) is None
    assert "content" in (registry.validate("Write", {"file_path": "a"}) or "")
    assert registry.validate("Write", {"file_path": "a", "content": 1}) is not None
    ok = {"file_path": "a", "old_string": "b", "new_string": "c"}
    assert registry.validate("Edit", ok) is None
    assert registry.validate("Edit", {**ok, "replace_all": True}) is None
    assert registry.validate("Edit", {**ok, "replace_all": "yes"}) is not None
    assert "Additional properties" in (registry.validate("Edit", {**ok, "extra": 1}) or "")
