"""Read: cat -n numbering, line-range arithmetic, caps, binary detection, confinement."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from apps.engine.errors import ToolError
from apps.engine.messages import ImageBlock, TextBlock
from apps.engine.tools.base import Concurrency
from apps.engine.tools.builtin.read import ReadTool
from apps.engine.tools.registry import ToolRegistry

from .conftest import Run

READ = ReadTool()


def _lines(n: int) -> str:
    return "".join(f"line {i}\n" for i in range(1, n + 1))


async def test_output_is_numbered_like_cat_n(run: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_text("first\n\tindented\nlast\n")
    out = await run(READ, file_path="a.txt")
    assert out.content == "     1\tfirst\n     2\t\tindented\n     3\tlast"
    assert not out.is_error


async def test_last_line_without_newline_and_crlf_endings(run: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_bytes(b"one\r\ntwo\r\nthree")
    out = await run(READ, file_path="a.txt")
    assert out.content == "     1\tone\n     2\ttwo\n     3\tthree"


async def test_byte_order_mark_is_not_shown(run: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_bytes("\ufeffhello\n".encode())
    assert (await run(READ, file_path="a.txt")).content == "     1\thello"


async def test_offset_and_limit_select_a_range_and_say_how_to_continue(
        run: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_text(_lines(10))
    out = await run(READ, file_path="a.txt", offset=3, limit=2)
    assert out.content == (
        "     3\tline 3\n     4\tline 4\n\n"
        "[Showing lines 3-4 of 10. Call Read with offset=5 to continue.]"
    )


async def test_range_reaching_the_end_has_no_continuation_note(run: Run,
                                                               workspace: Path) -> None:
    (workspace / "a.txt").write_text(_lines(10))
    out = await run(READ, file_path="a.txt", offset=9, limit=5)
    assert out.content == "     9\tline 9\n    10\tline 10"


async def test_default_limit_is_2000_lines(run: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_text(_lines(2500))
    out = await run(READ, file_path="a.txt", max_result_chars=1_000_000)
    body, note = out.content.split("\n\n")
    assert body.splitlines()[-1] == "  2000\tline 2000"
    assert len(body.splitlines()) == 2000
    assert note == "[Showing lines 1-2000 of 2,500. Call Read with offset=2001 to continue.]"


async def test_output_stays_under_max_result_chars(run: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_text(_lines(1000))
    out = await run(READ, file_path="a.txt", max_result_chars=1000)
    assert isinstance(out.content, str)
    assert len(out.content) <= 1000
    shown = out.content.split("\n\n")[0].splitlines()
    last = len(shown)
    assert shown[-1] == f"{last:>6}\tline {last}"
    assert f"[Showing lines 1-{last} of 1,000. Call Read with offset={last + 1} to continue.]" \
        in out.content


async def test_continuing_at_the_offset_given_reads_the_next_line(run: Run,
                                                                  workspace: Path) -> None:
    (workspace / "a.txt").write_text(_lines(1000))
    first = await run(READ, file_path="a.txt", max_result_chars=1000)
    assert isinstance(first.content, str)
    next_offset = int(first.content.rsplit("offset=", 1)[1].split(" ")[0])
    second = await run(READ, file_path="a.txt", offset=next_offset, limit=1)
    assert second.content.startswith(f"{next_offset:>6}\tline {next_offset}")


async def test_offset_past_the_end_is_an_error(run: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_text(_lines(3))
    with pytest.raises(ToolError, match="offset 7 is past the end of a.txt, which has 3 lines"):
        await run(READ, file_path="a.txt", offset=7)


async def test_forgiving_arguments_offset_zero_strings_and_nulls(run: Run,
                                                                 workspace: Path) -> None:
    (workspace / "a.txt").write_text(_lines(5))
    out = await run(READ, file_path="a.txt", offset=0, limit="2")
    assert out.content.startswith("     1\tline 1\n     2\tline 2\n\n")
    out = await run(READ, file_path="a.txt", offset=None, limit=None)
    assert out.content.endswith("     5\tline 5")


async def test_long_lines_are_truncated(run: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x" * 2500 + "\n")
    out = await run(READ, file_path="a.txt")
    assert out.content == "     1\t" + "x" * 2000 + "… [line truncated: 500 more characters]"


async def test_empty_file_says_so(run: Run, workspace: Path) -> None:
    (workspace / "empty.txt").write_text("")
    out = await run(READ, file_path="empty.txt")
    assert out.content == "The file empty.txt exists but is empty."
    assert not out.is_error


async def test_nul_bytes_mean_binary(run: Run, workspace: Path) -> None:
    (workspace / "blob.bin").write_bytes(b"ELF\x00\x01\x02garbage")
    with pytest.raises(ToolError, match="blob.bin looks like a binary file"):
        await run(READ, file_path="blob.bin")


async def test_invalid_utf8_means_binary(run: Run, workspace: Path) -> None:
    (workspace / "latin1.txt").write_bytes("café crème\n".encode("latin-1"))
    with pytest.raises(ToolError, match="binary file \\(or text that is not UTF-8\\)"):
        await run(READ, file_path="latin1.txt")


async def test_a_character_cut_by_the_sample_is_still_text(run: Run, workspace: Path) -> None:
    text = "a" + "é" * 5000 + "\n"  # the 8 KiB sample ends inside a two-byte character
    (workspace / "a.txt").write_text(text)
    out = await run(READ, file_path="a.txt", max_result_chars=100_000)
    assert out.content == "     1\t" + text[:2000] + "… [line truncated: 3,001 more characters]"


async def test_png_is_returned_as_an_image_block(run: Run, workspace: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(20)
    (workspace / "pic.png").write_bytes(png)
    out = await run(READ, file_path="pic.png")
    assert isinstance(out.content, list)
    note, image = out.content
    assert isinstance(note, TextBlock) and "pic.png (image/png" in note.text
    assert isinstance(image, ImageBlock) and image.media_type == "image/png"
    assert base64.b64decode(image.data) == png


async def test_webp_is_recognised_by_its_magic_bytes(run: Run, workspace: Path) -> None:
    (workspace / "pic.dat").write_bytes(b"RIFF\x10\x00\x00\x00WEBPVP8 " + bytes(8))
    out = await run(READ, file_path="pic.dat")
    assert isinstance(out.content, list)
    assert out.content[1].media_type == "image/webp"  # type: ignore[union-attr]


async def test_directory_points_to_glob(run: Run, workspace: Path) -> None:
    (workspace / "src").mkdir()
    with pytest.raises(ToolError, match="src is a directory, not a file. Use Glob"):
        await run(READ, file_path="src")


async def test_missing_file(run: Run) -> None:
    with pytest.raises(ToolError, match="^File not found: nope/missing.txt$"):
        await run(READ, file_path="nope/missing.txt")


async def test_absolute_path_inside_works(run: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_text("hi\n")
    assert (await run(READ, file_path=str(workspace / "a.txt"))).content == "     1\thi"


async def test_link_inside_to_inside_is_read(run: Run, workspace: Path) -> None:
    (workspace / "real.txt").write_text("real\n")
    (workspace / "alias.txt").symlink_to("real.txt")
    assert (await run(READ, file_path="alias.txt")).content == "     1\treal"


async def test_link_to_outside_is_refused(run: Run, workspace: Path, outside: Path) -> None:
    (workspace / "leak.txt").symlink_to(outside / "secret.txt")
    (workspace / "out").symlink_to(outside)
    with pytest.raises(ToolError, match="outside the workspace through a symbolic link"):
        await run(READ, file_path="leak.txt")
    with pytest.raises(ToolError, match="outside the workspace through a symbolic link"):
        await run(READ, file_path="out/secret.txt")


@pytest.mark.parametrize("path", ["../outside/secret.txt", "a/../../outside/secret.txt"])
async def test_dot_dot_escape_is_refused(run: Run, outside: Path, path: str) -> None:
    with pytest.raises(ToolError, match="is outside the workspace"):
        await run(READ, file_path=path)


async def test_absolute_path_outside_is_refused(run: Run, outside: Path) -> None:
    with pytest.raises(ToolError, match="is outside the workspace"):
        await run(READ, file_path=str(outside / "secret.txt"))


def test_schema_is_strict_and_read_runs_beside_others() -> None:
    registry = ToolRegistry([READ])
    assert registry.validate("Read", {"file_path": "a", "offset": 1, "limit": 5}) is None
    assert "file_path" in (registry.validate("Read", {}) or "")
    assert "Additional properties" in (registry.validate("Read", {"file_path": "a", "x": 1}) or "")
    assert registry.validate("Read", {"file_path": "a", "limit": 0}) is not None
    assert READ.spec.concurrency is Concurrency.ALWAYS
    assert READ.is_concurrency_safe({"file_path": "a"})
    assert not READ.needs_approval({"file_path": "a"})
