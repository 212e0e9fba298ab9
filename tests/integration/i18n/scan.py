"""Finds the user-facing strings of templates and JavaScript, marked for translation or not.

Templates: the template tags, variables and comments are masked (newlines kept, so line numbers
hold), ``{% translate %}`` / ``{% blocktranslate %}`` regions and ``{% comment %}`` blocks too;
what an HTML parser then finds as text, or as a ``title`` / ``aria-label`` / ``placeholder`` /
``alt`` value, with a letter in it, was written in English and not marked. Text inside
``<code>``, ``<kbd>``, ``<pre>``, ``<samp>``, ``<script>`` and ``<style>`` is code, not prose.
The msgids come from Django's own template parser (the nodes ``{% translate %}`` and
``{% blocktranslate %}`` compile to), so no gettext tool is needed.

JavaScript: a string literal that reads as prose (two words, or one capitalised word) and is
not the argument of ``gettext`` / ``ngettext`` / ``pgettext`` is unmarked, unless it is code:
compared with ``===``, a selector, an event name, a tag name, a key of ``dataset``. A line
ending in ``// i18n: not prose`` opts out, for what the rules cannot tell.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from django.template import engines
from django.template.base import Node
from django.templatetags.i18n import BlockTranslateNode, TranslateNode

ROOT = Path(__file__).resolve().parents[3]
TEMPLATE_DIRS = [ROOT / "templates"]
JS_DIRS = [ROOT / "apps"]
PYTHON_DIRS = [ROOT / "apps", ROOT / "config"]
UNTRANSLATED = {"confab", "UTC"}  # a name, and what Chinese writes as UTC too
HUMAN_ATTRIBUTES = {"title", "aria-label", "placeholder", "alt", "aria-roledescription"}
CODE_ELEMENTS = {"code", "kbd", "pre", "samp", "script", "style"}
_LETTER = re.compile(r"[^\W\d_]")


@dataclass(frozen=True, slots=True)
class Unmarked:
    """A string a person reads that is not marked for translation."""

    path: Path
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}: {self.text!r}"


def template_files() -> list[Path]:
    return sorted(p for d in TEMPLATE_DIRS for p in d.rglob("*") if p.suffix in (".html", ".txt"))


def js_files() -> list[Path]:
    return sorted(p for d in JS_DIRS for p in d.rglob("static/**/*.js") if "vendor" not in p.parts)


# -- templates ---------------------------------------------------------------------------------

# Blocks whose content is code (class names, data attributes), not prose.
CODE_BLOCKS = ("main_class", "wiki_data", "wiki_mode")
_REGIONS = re.compile(
    r"{%\s*block\s+(?:" + "|".join(CODE_BLOCKS) + r")\s*%}.*?{%\s*endblock\s*%}"
    r"|{%\s*(?P<block>comment|blocktranslate|blocktrans)\b.*?%}.*?{%\s*end(?P=block)\s*%}"
    r"|{%.*?%}|{{.*?}}|{#.*?#}", re.S)


def _masked(source: str) -> str:
    """``source`` with every template construct (and translated block) blanked out to spaces,
    its length and newlines kept (so positions and line numbers hold)."""
    return _REGIONS.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), source)


class _TextFinder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[int, str]] = []
        self.code_depth = 0

    def _check(self, text: str) -> None:
        first = _LETTER.search(text)
        shown = " ".join(text.split())
        if first and shown not in UNTRANSLATED:  # the line of the first letter, not of the node
            self.found.append((self.getpos()[0] + text.count("\n", 0, first.start()), shown))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in CODE_ELEMENTS:
            self.code_depth += 1
        for name, value in attrs:
            if name in HUMAN_ATTRIBUTES and value:
                self._check(value)

    def handle_endtag(self, tag: str) -> None:
        if tag in CODE_ELEMENTS and self.code_depth:
            self.code_depth -= 1

    def handle_data(self, data: str) -> None:
        if not self.code_depth:
            self._check(data)


def unmarked_template_strings(path: Path) -> Iterator[Unmarked]:
    """The prose of ``path`` that no translate tag covers."""
    source = path.read_text()
    if path.suffix == ".txt":  # e-mail bodies and subjects: plain text, no HTML
        for number, line in enumerate(_masked(source).split("\n"), start=1):
            text = " ".join(line.split())
            if _LETTER.search(text):
                yield Unmarked(path, number, text)
        return
    finder = _TextFinder()
    finder.feed(_masked(source))
    finder.close()
    for line, text in finder.found:
        yield Unmarked(path, line, text)


def _walk(node: Node) -> Iterator[Node]:
    yield node
    for attr in node.child_nodelists:
        for child in getattr(node, attr, None) or []:
            yield from _walk(child)


def template_msgids(path: Path) -> Iterator[str]:
    """The msgids of ``path``'s translate tags, as Django looks them up."""
    template = engines["django"].engine.from_string(path.read_text())  # type: ignore[attr-defined]
    for top in template.nodelist:
        for node in _walk(top):
            if isinstance(node, TranslateNode) and node.filter_expression.var.literal:
                yield str(node.filter_expression.var.literal)
            elif isinstance(node, BlockTranslateNode):  # a plural is looked up by its singular
                singular, _vars = node.render_token_list(node.singular)
                yield singular.replace("%%", "%")


# -- JavaScript --------------------------------------------------------------------------------

_JS_STRING = re.compile(r"""(?P<q>["'`])(?P<body>(?:\\.|(?!(?P=q)).)*)(?P=q)""", re.S)
# A literal that is an argument of gettext and friends (the plural of ngettext too).
_JS_CALL = re.compile(r"\bn?p?gettext\((?:\s*([\"'])(?:\\.|(?!\1).)*\1\s*,)*\s*$")
# A literal that is code: compared, imported, a selector, an event, a tag or class name, an
# attribute that no person reads.
_JS_CODE_BEFORE = re.compile(
    r"(?:===|!==|==|!=|\bcase|\bimport|\bfrom|querySelector(?:All)?\(|closest\(|matches\("
    r"|addEventListener\(|removeEventListener\(|createElement\(|classList\.\w+\("
    r"|element\((?:\s*\"[\w-]+\",)?|setAttribute\(|getAttribute\(|toggleAttribute\("
    r"|setAttribute\(\s*\"(?!aria-label|title|placeholder|alt)[\w-]+\",|dataset\[|\.type\s*=|\.className\s*=)"
    r"\s*$")
# Comments, and regular-expression literals (after an operator or an opening bracket), blanked
# out so that their quotes do not open strings.
_JS_NOISE = re.compile(r"/\*.*?\*/|(?<![:\"'`\\])//[^\n]*"
                       r"|(?<=[(,=:!&|?{;])\s*/(?![*/])(?:\\.|\[(?:\\.|[^\]])*\]|[^/\n\\])+/[dgimsuy]*",
                       re.S)
_PROSE = re.compile(r"[^\W\d_]{2,}[^\S\n]+[^\W\d_]{2,}|^[A-Z][a-z]+[.:!?…]?$")


def unmarked_js_strings(path: Path) -> Iterator[Unmarked]:
    """The prose literals of ``path`` outside ``gettext`` and friends."""
    source = path.read_text()
    lines = source.split("\n")
    comment_free = _JS_NOISE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), source)
    for match in _JS_STRING.finditer(comment_free):
        body = re.sub(r"\$\{[^}]*\}", " ", match.group("body"))
        if not _PROSE.search(body):
            continue
        before = comment_free[max(0, match.start() - 200):match.start()]
        if _JS_CALL.search(before) or _JS_CODE_BEFORE.search(before):
            continue
        line = comment_free.count("\n", 0, match.start()) + 1
        if lines[line - 1].rstrip().endswith("// i18n: not prose"):
            continue
        yield Unmarked(path, line, match.group(0))


def js_msgids(path: Path) -> Iterator[str]:
    """The literal first arguments of ``gettext`` / ``ngettext`` (a plural is looked up by its
    singular)."""
    pattern = re.compile(r"""\b(?:gettext|ngettext)\(\s*(["'])((?:\\.|(?!\1).)*)\1""", re.S)
    for match in pattern.finditer(path.read_text()):
        yield ast.literal_eval(match.group(1) + match.group(2) + match.group(1))


# -- Python --------------------------------------------------------------------------------------

_PY_GETTEXT = {"_", "gettext", "gettext_lazy", "ngettext", "ngettext_lazy"}


def python_files() -> list[Path]:
    return sorted(p for d in PYTHON_DIRS for p in d.rglob("*.py") if "migrations" not in p.parts)


def python_msgids(path: Path) -> Iterator[str]:
    """The literal msgids of ``_()``, ``gettext()``, ``gettext_lazy()``, ``ngettext()`` calls."""
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in _PY_GETTEXT):
            continue
        if node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):  # a plural: looked up by its singular
            yield node.args[0].value
