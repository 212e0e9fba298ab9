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


# ``{{ x|default:"..." }}``: prose there needs ``default:_("...")``.
_FILTER_LITERAL = re.compile(r"""{{[^}]*\|default:"([^"]*)"[^}]*}}""")


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
    for match in _FILTER_LITERAL.finditer(source):  # {{ x|default:"..." }}, not default:_("...")
        if _PROSE.search(match.group(1)):  # prose, not a code such as "en"
            yield Unmarked(path, source.count("\n", 0, match.start()) + 1, match.group(1))


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


def django_python_files() -> list[Path]:
    """:func:`python_files` without the engine: it cannot import Django (DESIGN 1), and its
    texts (tool descriptions, its command line) are for the model and developers."""
    engine = ROOT / "apps" / "engine"
    return [p for p in python_files() if not p.is_relative_to(engine)]


def python_msgids(path: Path) -> Iterator[str]:
    """The literal msgids of ``_()``, ``gettext()``, ``gettext_lazy()``, ``ngettext()`` calls."""
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in _PY_GETTEXT):
            continue
        if node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):  # a plural: looked up by its singular
            yield node.args[0].value


# What a person reads from Python: the message of a refusal or a notice, a form's or a model's
# label and help. A literal there (a str, an f-string, ``"..." % x``, ``"...".format()``) was
# written in English and not marked; a name or a call other than gettext cannot be judged here.
_PY_MESSAGE_ARGUMENT = {  # callee name -> the index of its human argument
    "ApplicationError": 1, "WikiConflictError": 0, "ValidationError": 0, "PermissionDenied": 0,
    "success": 1, "error": 1, "info": 1, "warning": 1, "message_user": 1, "add_error": 1,
}
_PY_HUMAN_KEYWORDS = {"label", "help_text", "verbose_name", "verbose_name_plural",
                      "empty_label", "description", "busy", "upload_error", "link_text"}
# The OpenAPI schema's descriptions are for developers, in English like the error codes.
_PY_SCHEMA_CALLS = {"Field", "Query", "Path", "Body", "NinjaAPI", "ConfabAPI"}
_PY_NOTICES = {"success", "error", "info", "warning"}  # of django.contrib.messages, not a logger
# ``message=`` is a person's to read in these; elsewhere it is mostly a git commit message.
_PY_MESSAGE_KEYWORD_CALLS = {"WarningEvent", "ConnectionReport"}
_PY_HUMAN_ATTRIBUTES = {"verbose_name", "verbose_name_plural", "short_description"}


def _callee(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr \
        if isinstance(func, ast.Attribute) else ""


def _is_prose_literal(node: ast.AST | None) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and bool(_LETTER.search(node.value))
    if isinstance(node, ast.JoinedStr):  # f"{what}: {why}" joins translated parts
        return any(_is_prose_literal(part) for part in node.values)
    if isinstance(node, ast.BoolOp):  # a or "..."
        return any(_is_prose_literal(value) for value in node.values)
    if isinstance(node, ast.IfExp):
        return _is_prose_literal(node.body) or _is_prose_literal(node.orelse)
    if isinstance(node, ast.BinOp):  # "..." % x, "..." + x
        return _is_prose_literal(node.left)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):  # "...".format()
        return node.func.attr == "format" and _is_prose_literal(node.func.value)
    return False


def _human_values(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, ast.Call):
        callee = _callee(node)
        of_messages = isinstance(node.func, ast.Attribute) \
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "messages"
        index = _PY_MESSAGE_ARGUMENT.get(callee, len(node.args))
        if index < len(node.args) and (callee not in _PY_NOTICES or of_messages):
            yield node.args[index]
        human = _PY_HUMAN_KEYWORDS | {"message"} if callee in _PY_MESSAGE_KEYWORD_CALLS \
            or callee.endswith("Validator") else _PY_HUMAN_KEYWORDS
        if callee not in _PY_SCHEMA_CALLS:
            yield from (k.value for k in node.keywords if k.arg in human)
    elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name)
                                              and t.id in _PY_HUMAN_ATTRIBUTES
                                              for t in node.targets):
        yield node.value


def unmarked_python_strings(path: Path) -> Iterator[Unmarked]:
    """The prose literals of ``path`` in a refusal, a notice, a label or a help text that no
    ``gettext`` call wraps."""
    for node in ast.walk(ast.parse(path.read_text())):
        for value in _human_values(node):
            if _is_prose_literal(value):
                yield Unmarked(path, value.lineno, ast.unparse(value))


def not_found_kinds(path: Path) -> Iterator[tuple[int, str]]:
    """The literal ``what`` of each ``not_found("what")`` call in ``path``, with its line."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and _callee(node) == "not_found" and node.args \
                and isinstance(node.args[0], ast.Constant):
            yield node.args[0].lineno, node.args[0].value
