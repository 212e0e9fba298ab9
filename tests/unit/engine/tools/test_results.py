"""Large-result storage: the full text in the workspace, a preview naming a path Read accepts."""

from __future__ import annotations

import re
from pathlib import Path

from apps.engine.tools.builtin.grep import GrepTool
from apps.engine.tools.builtin.read import ReadTool
from apps.engine.tools.results import store_if_large

from .conftest import Run

BIG = "".join(f"output line {i}\n" for i in range(1, 5001))  # 5,000 lines, ~90k characters


def _saved_path(preview: str) -> str:
    match = re.search(r"saved to (\S+);", preview)
    assert match, preview
    return match.group(1)


async def test_small_result_is_returned_unchanged_and_nothing_is_stored(
        workspace: Path) -> None:
    assert await store_if_large(workspace, "call_1", "short", 5) == "short"
    assert not (workspace / ".confab").exists()


async def test_large_result_is_stored_in_full(workspace: Path) -> None:
    preview = await store_if_large(workspace, "toolu_01ABC", BIG, 30_000)
    assert _saved_path(preview) == ".confab/results/toolu_01ABC.txt"
    assert (workspace / ".confab" / "results" / "toolu_01ABC.txt").read_text() == BIG


async def test_preview_has_header_head_tail_and_stays_small(workspace: Path) -> None:
    preview = await store_if_large(workspace, "call_1", BIG, 30_000)
    assert preview.startswith(
        f"[Output too large ({len(BIG):,} characters, 5,000 lines). The full output is saved "
        "to .confab/results/call_1.txt; Read it with offset/limit, or Grep it, to see the rest.]"
        "\n\noutput line 1\noutput line 2\n"
    )
    assert preview.endswith("output line 4999\noutput line 5000\n")
    assert re.search(r"\[\.\.\. [\d,]+ characters, [\d,]+ line breaks omitted \.\.\.\]", preview)
    assert len(preview) < 4_500


async def test_preview_respects_a_limit_below_the_default_budget(workspace: Path) -> None:
    preview = await store_if_large(workspace, "call_1", BIG, 600)
    body = preview.split("\n\n", 1)[1]
    assert len(body) < 700
    assert body.startswith("output line 1\n") and body.endswith("output line 5000\n")


async def test_one_huge_line_is_cut_inside_the_line(workspace: Path) -> None:
    text = "x" * 100_000
    preview = await store_if_large(workspace, "call_1", text, 1_000)
    body = preview.split("\n\n", 1)[1]
    assert body.startswith("x" * 600) and body.endswith("x" * 300)
    assert "characters, 0 line breaks omitted" in body


async def test_unsafe_call_ids_become_hashed_names(workspace: Path) -> None:
    preview = await store_if_large(workspace, "../../evil/id", BIG, 1_000)
    path = _saved_path(preview)
    assert re.fullmatch(r"\.confab/results/call-[0-9a-f]{32}\.txt", path)
    assert (workspace / path).read_text() == BIG


async def test_stored_result_is_readable_with_read_and_grep(run: Run, workspace: Path) -> None:
    path = _saved_path(await store_if_large(workspace, "call_9", BIG, 30_000))
    out = await run(ReadTool(), file_path=path, offset=2500, limit=2)
    assert out.content == (
        "  2500\toutput line 2500\n  2501\toutput line 2501\n\n"
        "[Showing lines 2500-2501 of 5,000. Call Read with offset=2502 to continue.]"
    )
    out = await run(GrepTool(), pattern="line 4242$", path=path)
    assert out.content == ".confab/results/call_9.txt:4242:output line 4242"


async def test_planted_link_cannot_redirect_the_stored_file(workspace: Path,
                                                             outside: Path) -> None:
    (workspace / ".confab").mkdir()
    (workspace / ".confab" / "results").symlink_to(outside)
    preview = await store_if_large(workspace, "call_1", BIG, 30_000)
    assert preview.startswith(f"[Output too large ({len(BIG):,} characters) and it could not "
                              "be saved (")
    assert "output line 1\n" in preview and preview.endswith("output line 5000\n")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


async def test_storing_twice_overwrites(workspace: Path) -> None:
    await store_if_large(workspace, "call_1", BIG, 1_000)
    await store_if_large(workspace, "call_1", BIG[:2_000], 1_000)
    assert (workspace / ".confab" / "results" / "call_1.txt").read_text() == BIG[:2_000]
