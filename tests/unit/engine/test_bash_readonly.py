"""The Bash read-only analyzer: a table of command lines with the verdict each must get, the
reasons named for a sample of refusals, and the tokenizer and parser on their own (including a
comparison with what a real bash passes as argv for quoting-heavy words)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.engine.tools.bash_readonly import Analysis, analyze, is_read_only
from apps.engine.tools.bash_readonly.parser import Compound, SimpleCommand, parse
from apps.engine.tools.bash_readonly.tokenizer import (
    Operator,
    Redirect,
    ShellSyntaxError,
    Word,
    tokenize,
)

R, W = True, False  # read-only / not read-only

TABLE: list[tuple[str, bool]] = [
    # plain read-only commands
    ("ls", R),
    ("ls -la /tmp", R),
    ("cat README.md", R),
    ("head -n 20 file.txt", R),
    ("tail -f app.log", R),
    ("wc -l src/*.py", R),
    ("grep -rn 'TODO' src", R),
    ("egrep -i 'a|b' notes.txt", R),
    ("rg --files", R),
    ("rg -n foo --glob '*.py'", R),
    ("pwd", R),
    ("echo hello world", R),
    ("printf '%s\\n' a b", R),
    ("date", R),
    ("date -u +%Y-%m-%d", R),
    ("date -Iseconds", R),
    ("whoami", R),
    ("id -u", R),
    ("uname -a", R),
    ("hostname", R),
    ("hostname -f", R),
    ("stat -c %s file", R),
    ("du -sh .", R),
    ("df -h", R),
    ("file image.png", R),
    ("which python3", R),
    ("type ls", R),
    ("basename /a/b.txt .txt", R),
    ("dirname /a/b.txt", R),
    ("realpath .", R),
    ("readlink -f link", R),
    ("tree -L 2 -a", R),
    ("jq '.name' package.json", R),
    ("yq -o json '.version' config.yaml", R),
    ("seq 1 10", R),
    ("nl -ba file", R),
    ("tac file", R),
    ("rev file", R),
    ("column -t data.tsv", R),
    ("od -c file", R),
    ("xxd file.bin", R),
    ("xxd -l 64 -c 16 file.bin", R),
    ("hexdump -C file.bin", R),
    ("sha256sum a b", R),
    ("md5sum -c sums.md5", R),
    ("true", R),
    ("false", R),
    ("test -f setup.py", R),
    ("[ -d src ]", R),
    ("diff -u a.txt b.txt", R),
    ("cmp a b", R),
    ("cut -d: -f1 /etc/passwd", R),
    ("tr a-z A-Z < in.txt", R),
    ("sort -u names.txt", R),
    ("sort -t, -k2 -n data.csv", R),
    ("uniq -c sorted.txt", R),
    ("uniq -f 2 in.txt", R),
    ("env", R),
    ("printenv HOME", R),
    ("cd src && ls", R),
    # unknown commands and known writers
    ("make", W),
    ("rm -rf build", W),
    ("mv a b", W),
    ("cp a b", W),
    ("touch x", W),
    ("mkdir -p d", W),
    ("python3 script.py", W),
    ("curl https://example.com", W),
    ("tee out.txt", W),
    ("less README.md", W),
    ("more README.md", W),
    ("/bin/ls", W),
    ("./configure", W),
    ("sudo ls", W),
    ("bash -c 'ls'", W),
    ("eval ls", W),
    # sed
    ("sed -n '1,10p' file", R),
    ("sed 's/foo/bar/g' file", R),
    ("sed -e 's/a/b/' -e '/^#/d' file", R),
    ("sed -nE '/^a|b$/p' file", R),
    ("sed '/start/r header.txt' file", R),
    ("sed 'y/abc/xyz/' file", R),
    ("sed '$!N;s/\\n/ /' file", R),
    ("sed -n '/x/{p;q}' file", R),
    ("sed '1a appended; text' file", R),
    ("sed -i 's/a/b/' file", W),
    ("sed -i.bak 's/a/b/' file", W),
    ("sed --in-place 's/a/b/' file", W),
    ("sed --in-pl 's/a/b/' file", W),
    ("sed -ni 's/a/b/p' file", W),
    ("sed 's/a/b/' file -i", W),
    ("sed 's/a/b/w out.txt' file", W),
    ("sed -n '/x/w out.txt' file", W),
    ("sed '1e date' file", W),
    ("sed 's/.*/date/e' file", W),
    ("sed -f script.sed file", W),
    ("sed -n '/[/]/p' file", W),
    ("sed 's/a/b/' *.txt", W),
    ('sed -n p "$f"', W),
    ("sed ':a;w out' file", W),
    ("sed 'v 4.2 W out' file", W),
    # find
    ("find . -name '*.py'", R),
    ("find . -type f -newer x -print", R),
    ("find . -name '*.pyc' -delete", W),
    ("find . -exec rm {} \\;", W),
    ("find . -execdir cat {} +", W),
    ("find . -ok rm {} \\;", W),
    ("find . -fprint out.txt", W),
    ("find . -fls out.txt", W),
    ("find . -name *.py", W),
    # awk
    ("awk '{print $1}' file", R),
    ("awk -F: -v OFS=, '{print $1, $3}' /etc/passwd", R),
    ("awk 'BEGIN { system(\"rm x\") }'", W),
    ("awk '{print > \"out\"}' file", W),
    ("awk '{print | \"sh\"}' file", W),
    ("awk '$3 > 100' file", W),
    ("awk -f prog.awk file", W),
    ("gawk '@load \"ext\"; {print}' file", W),
    # options of other validated commands
    ("sort -o sorted.txt names.txt", W),
    ("sort --output=sorted.txt names.txt", W),
    ("sort --out=sorted.txt names.txt", W),
    ("sort -rno sorted.txt names.txt", W),
    ("sort --compress-program=gzip big.txt", W),
    ("uniq in.txt out.txt", W),
    ("rg --pre ./decode.sh pattern", W),
    ("rg -z pattern", W),
    ("printf -v var '%s' x", W),
    ('printf \'%s\\n\' "$HOME"', R),
    ("date -s '2020-01-01'", W),
    ("date --set='2020-01-01'", W),
    ("hostname newname", W),
    ("xxd -r dump.hex", W),
    ("xxd -revert dump.hex", W),
    ("xxd in.bin out.hex", W),
    ("yq -i '.a = 1' f.yaml", W),
    ("tree -o out.txt", W),
    ("file -C -m magic", W),
    ("test -v 'a[$(id)]'", W),
    # git
    ("git status", R),
    ("git status --short", R),
    ("git log --oneline -n 20", R),
    ("git log -p --stat -- src/", R),
    ("git diff HEAD~1 -- file.py", R),
    ("git diff --cached --no-ext-diff", R),
    ("git show HEAD:README.md", R),
    ("git branch", R),
    ("git branch -a -v", R),
    ("git branch -vv", R),
    ("git branch --list 'feat/*'", R),
    ("git branch --show-current", R),
    ("git branch --merged main", R),
    ("git branch new-feature", W),
    ("git branch -d old", W),
    ("git branch -D old", W),
    ("git branch -m old new", W),
    ("git tag", R),
    ("git tag -l 'v1.*'", R),
    ("git tag v1.0", W),
    ("git tag -d v1.0", W),
    ("git rev-parse --show-toplevel", R),
    ("git ls-files -m", R),
    ("git blame -L 10,20 file.py", R),
    ("git grep -n TODO", R),
    ("git grep -O TODO", W),
    ("git grep --textconv TODO", W),
    ("git describe --tags", R),
    ("git remote -v", R),
    ("git remote get-url origin", R),
    ("git remote add origin https://example.com/r.git", W),
    ("git remote show origin", W),
    ("git config --get user.email", R),
    ("git config --list", R),
    ("git config user.email x@y", W),
    ("git config --unset user.email", W),
    ("git config set --get user.email", W),
    ("git stash list", R),
    ("git stash show -p", R),
    ("git stash", W),
    ("git stash pop", W),
    ("git commit -m x", W),
    ("git push", W),
    ("git checkout main", W),
    ("git reset --hard", W),
    ("git pull", W),
    ("git clean -fd", W),
    ("git -c core.pager=sh log", W),
    ("git --exec-path=/tmp log", W),
    ("git -C sub status", R),
    ("git --no-pager log -1", R),
    ("git log --output=out.txt", W),
    ("git diff --ext-diff", W),
    ("git log --help", W),
    # pipelines and lists
    ("ls | grep foo | wc -l", R),
    ("ls | tee out.txt", W),
    ("cat a; cat b", R),
    ("cat a && rm a", W),
    ("test -f a || echo missing", R),
    ("ls || make", W),
    ("ls &", W),
    ("sleep 10 & ls", W),
    ("ls\npwd", R),
    ("ls |& grep err", R),
    ("! grep -q x f", R),
    # redirections
    ("ls > out.txt", W),
    ("ls >> out.txt", W),
    ("ls 2> err.txt", W),
    ("ls &> all.txt", W),
    ("ls >& all.txt", W),
    ("ls >| out.txt", W),
    ("ls 3>out", W),
    ("cat <> file", W),
    ('ls > "$OUT"', W),
    ("ls > /dev/null", R),
    ("ls 2>/dev/null", R),
    ("ls 2>&1 | head", R),
    ("ls >&2", R),
    ("ls 2>&-", R),
    ("echo hi >/dev/stderr", R),
    ("cat < in.txt", R),
    ("cat < /dev/tcp/example.com/80", W),
    ('grep x <<< "$text"', R),
    # command and process substitution
    ("echo $(pwd)", R),
    ("echo $(rm -rf /)", W),
    ("echo `date`", R),
    ("echo `rm x`", W),
    ("cat $(find . -name '*.md')", R),
    ("echo $(echo $(whoami))", R),
    ("echo $(echo $(touch x))", W),
    ('echo "$(ls)"', R),
    ('echo "`rm x`"', W),
    ("echo `echo \\`whoami\\``", R),
    ("echo `echo \\`rm x\\``", W),
    ("diff <(sort a) <(sort b)", R),
    ("diff <(sort a) <(rm b)", W),
    ("echo hi > >(cat)", W),
    ("$(echo rm) -rf /", W),
    ("`echo ls`", W),
    ("ls $(echo -la)", R),
    ("x=$(rm y)", W),
    # quoting: operators inside quotes are text
    ("grep ';' file", R),
    ('echo "a > b"', R),
    ("echo 'a | rm -rf /'", R),
    ('echo "a && rm x"', R),
    ("echo a\\;rm x", R),
    ('grep "foo\\"bar" f', R),
    ("echo $'a\\tb'", R),
    ("$'\\x72m' -rf x", W),
    ("'ls' -la", R),
    ("l\\s", R),
    ("echo 'unterminated", W),
    ('echo "unterminated', W),
    ("echo `unterminated", W),
    ("echo $(unterminated", W),
    ("echo \\", W),
    # environment prefixes and assignments
    ("LC_ALL=C sort f", R),
    ("LANG=C.UTF-8 ls", R),
    ("TZ=UTC date", R),
    ("GIT_PAGER=cat git log", R),
    ("PAGER=cat git log", R),
    ("GIT_PAGER=less git log", W),
    ("LD_PRELOAD=/tmp/x.so ls", W),
    ("PATH=/tmp/evil:$PATH ls", W),
    ("BASH_ENV=/tmp/x ls", W),
    ("GIT_SSH_COMMAND='sh -c x' git status", W),
    ("GIT_EXTERNAL_DIFF=./x git diff", W),
    ("HOME=/tmp/evil git status", W),
    ("FOO=bar ls", W),
    ('f=README.md; cat "$f"', R),
    ("PATH=/tmp; ls", W),
    ("IFS=x; ls", W),
    ("env LC_ALL=C ls", R),
    ("env LD_PRELOAD=x ls", W),
    ("env -i ls", W),
    ("env -u PATH ls", W),
    ("env -S 'rm x'", W),
    ("env rm x", W),
    ("env ls -la", R),
    # wrappers
    ("time ls", R),
    ("time -p grep x f", R),
    ("time -o out ls", W),
    ("nice -n 10 grep x f", R),
    ("nice rm x", W),
    ("timeout 5 tail -f log", R),
    ("timeout -s KILL 10 cat f", R),
    ("timeout 5 rm x", W),
    ("command -v git", R),
    ("command rm x", W),
    # xargs
    ("find . -name '*.py' | xargs wc -l", R),
    ("find . | xargs grep -l foo", R),
    ("find . | xargs rm", W),
    ("ls | xargs -I{} cat {}", R),
    ("ls | xargs sed -i s/a/b/", W),
    ("ls | xargs sed -n p", W),
    ("ls | xargs -0 -n1 echo", R),
    ("ls | xargs", R),
    ("ls | xargs -p cat", W),
    ("ls | xargs env rm", W),
    ("ls | xargs git show", W),
    # subshells and groups
    ("(cd src && ls)", R),
    ("(ls; rm x)", W),
    ("{ ls; pwd; }", R),
    ("{ ls; rm x; }", W),
    ("(ls) > out", W),
    ("{ ls; } 2>/dev/null", R),
    ("( (ls) )", R),
    ("f() { ls; }", W),
    ("{ ls }", W),
    # here-documents
    ("cat <<EOF\nhello\nEOF", R),
    ("cat <<'EOF'\n$(rm x)\nEOF", R),
    ("cat <<EOF\n$(rm x)\nEOF", W),
    ("cat <<EOF\n`whoami`\nEOF", R),
    ("cat <<EOF > out.txt\nhi\nEOF", W),
    ("cat <<EOF\nunterminated", W),
    ("cat <<-EOF\n\thello\n\tEOF", R),
    ("cat <<EOF\nEO\\\nF\nrm x\nEOF", W),
    ("cat <<EOF\nhi\nEOF\nrm x", W),
    ("grep a <<A && grep b <<B\na\nA\nb\nB", R),
    ("echo $(cat <<EOF\nhi)\nEOF\n)", R),
    # expansions: a $VAR command name is unknown
    ("$CMD", W),
    ("${CMD} -la", W),
    ("$HOME/bin/tool", W),
    ("echo $HOME", R),
    ("echo ${HOME}", R),
    ("echo ${x:-default}", R),
    ("echo ${x:-$(rm y)}", W),
    ("echo ${x:->(rm y)}", W),
    ("echo ${x:-<(ls)}", R),
    ("echo ${!x}", W),
    ("echo ${x@P}", W),
    ("echo ${x:1}", W),
    ("echo $((1+2))", W),
    ("ls *.py", R),
    ("ls {a,b}.txt", R),
    ("sed -n p {a,b}.txt", W),
    ("ls {fd}>/dev/null", W),
    # shell keywords are not analyzed
    ("for f in *; do cat $f; done", W),
    ("if true; then ls; fi", W),
    ("while true; do ls; done", W),
    ("[[ -f x ]]", W),
    ("case x in a) ls;; esac", W),
    # unicode
    ("echo héllo wörld", R),
    ("grep 'naïve' fichier.txt", R),
    ("cat 文件.txt", R),
    ("\uff4c\uff53", W),  # fullwidth "ls"
    ("ls\u00a0-la", W),
    ("echo 🚀 | wc -c", R),
    # empty, comments, syntax errors
    ("", W),
    ("   ", W),
    ("# just a comment", W),
    ("ls # comment > out.txt", R),
    ("ls |", W),
    ("| ls", W),
    ("ls &&", W),
    ("ls )", W),
    ("ls ;;", W),
    ("(" * 100 + "ls" + ")" * 100, W),
    ("echo " + "$(echo " * 40 + "x" + ")" * 40, W),
]


def test_the_table_is_large_and_has_no_duplicates() -> None:
    commands = [command for command, _ in TABLE]
    assert len(commands) >= 150
    assert len(set(commands)) == len(commands)


@pytest.mark.parametrize(("command", "expected"), TABLE)
def test_command_line_verdict(command: str, expected: bool) -> None:
    result = analyze(command)
    assert result.read_only is expected, result.reason
    assert is_read_only(command) is expected


REFUSALS: list[tuple[str, str]] = [
    ("sed -i 's/a/b/' f", "sed -i edits files in place"),
    ("sed 's/a/b/w out' f", "w writes a file"),
    ("ls > out.txt", "output redirection to out.txt"),
    ("make", "unknown command: make"),
    ("find . -delete", "-delete"),
    ("find . -exec rm {} +", "-exec"),
    ("git push", "git push"),
    ("git branch -D x", "-D"),
    ("echo $(rm x)", "rm"),
    ("LD_PRELOAD=x ls", "LD_PRELOAD"),
    ("ls | xargs sed -n p", "sed"),
    ("sleep 1 &", "&"),
    ("echo 'x", "unterminated single quote"),
    ("", "empty command"),
    ("$CMD", "$CMD"),
    ("awk 'BEGIN{system(\"x\")}'", "system"),
    ("cat <<EOF\nx", "here-document"),
    ("sort -o out f", "-o"),
    ("rg --pre x p", "--pre"),
    ("echo $((1+1))", "arithmetic"),
    ("for x in y; do ls; done", "for"),
    ("tee f", "tee"),
    ("uniq a b", "b"),
    ("git -c core.pager=sh log", "-c"),
    ("cat <> f", "<>"),
]


@pytest.mark.parametrize(("command", "culprit"), REFUSALS)
def test_refusal_reason_names_the_culprit(command: str, culprit: str) -> None:
    result = analyze(command)
    assert not result.read_only
    assert culprit in result.reason


READ_ONLY_ROWS = [command for command, expected in TABLE if expected]


@given(st.text(alphabet="ab $()`'\"\\|&;<>{}[]*?#=\n\t-!~:@%+,.0123456789"))
def test_any_text_gets_a_verdict_and_never_raises(command: str) -> None:
    result = analyze(command)
    assert isinstance(result.read_only, bool) and result.reason


@given(st.text())
def test_any_unicode_gets_a_verdict_and_never_raises(command: str) -> None:
    assert isinstance(analyze(command), Analysis)


@given(st.sampled_from(READ_ONLY_ROWS), st.sampled_from(READ_ONLY_ROWS))
def test_two_read_only_lines_together_are_read_only(first: str, second: str) -> None:
    assert analyze(f"{first}\n{second}").read_only


@given(st.sampled_from(READ_ONLY_ROWS))
def test_a_read_only_line_followed_by_a_write_is_not(first: str) -> None:
    assert not analyze(f"{first}\nrm -rf build").read_only


def test_analysis_is_a_frozen_value() -> None:
    result = analyze("ls")
    assert result == Analysis(True, result.reason)
    with pytest.raises(AttributeError):
        result.read_only = False  # type: ignore[misc]


# -- tokenizer -------------------------------------------------------------------------------


def words(command: str) -> list[str]:
    return [t.text for t in tokenize(command) if isinstance(t, Word)]


def test_quotes_and_escapes_are_removed() -> None:
    assert words("echo 'a b' \"c d\" e\\ f") == ["echo", "a b", "c d", "e f"]


def test_operators_inside_quotes_are_text() -> None:
    tokens = tokenize("grep ';|&&>' f")
    assert all(isinstance(t, Word) for t in tokens)
    assert words("grep ';|&&>' f") == ["grep", ";|&&>", "f"]


def test_operators_split_words_without_spaces() -> None:
    tokens = tokenize("a|b&&c;d")
    assert [t.op for t in tokens if isinstance(t, Operator)] == ["|", "&&", ";"]
    assert words("a|b&&c;d") == ["a", "b", "c", "d"]


def test_double_quotes_keep_backslashes_that_escape_nothing() -> None:
    assert words('echo "a\\"b" "x\\y" "\\$HOME"') == ["echo", 'a"b', "x\\y", "$HOME"]


def test_ansi_c_quotes_are_decoded() -> None:
    assert words("echo $'a\\tb' $'\\x41\\101' $'it\\'s'") == ["echo", "a\tb", "AA", "it's"]


def test_ansi_c_nul_makes_the_word_dynamic() -> None:
    (_, word) = tokenize("echo $'-\\0i'")
    assert isinstance(word, Word) and word.dynamic


def test_redirections_carry_their_descriptor() -> None:
    tokens = tokenize("ls 2>&1 >out a2>x")
    redirects = [t for t in tokens if isinstance(t, Redirect)]
    assert [(r.fd, r.op, r.target.text) for r in redirects] == [
        ("2", ">&", "1"), (None, ">", "out"), (None, ">", "x")
    ]
    assert words("ls 2>&1 >out a2>x") == ["ls", "a2"]


def test_heredoc_body_is_attached_and_expanded_only_when_unquoted() -> None:
    (_, expanded, _) = tokenize("cat <<EOF\n$(whoami)\nEOF")
    (_, literal, _) = tokenize("cat <<'EOF'\n$(whoami)\nEOF")
    assert isinstance(expanded, Redirect) and isinstance(literal, Redirect)
    assert expanded.heredoc is not None and len(expanded.heredoc.substitutions) == 1
    assert literal.heredoc is not None and literal.heredoc.substitutions == ()
    assert literal.heredoc.text == "$(whoami)\n"


def test_command_substitutions_are_tokenized_recursively() -> None:
    (_, word) = tokenize("echo $(ls $(pwd) | wc -l)")
    assert isinstance(word, Word) and word.dynamic
    (outer,) = word.substitutions
    assert outer.kind == "$("
    inner_word = outer.tokens[1]
    assert isinstance(inner_word, Word)
    assert inner_word.substitutions[0].tokens == (Word("pwd", "pwd"),)


def test_nested_backticks_unescape_one_level() -> None:
    (_, word) = tokenize("echo `echo \\`whoami\\``")
    assert isinstance(word, Word)
    inner = word.substitutions[0].tokens[1]
    assert isinstance(inner, Word) and inner.substitutions[0].kind == "`"


def test_process_substitution_inside_a_word_stays_in_the_word() -> None:
    assert len(tokenize("echo a<(true)")) == 2


@pytest.mark.parametrize(
    ("text", "dynamic"),
    [("$x", True), ("${x}", True), ("*.py", True), ("[ab]", True), ("{a,b}", True),
     ("{1..3}", True), ("[", False), ("]", False), ("{}", False), ("'*'", False),
     ("~/x", False), ("a=b", False)],
)
def test_words_with_run_time_values_are_dynamic(text: str, dynamic: bool) -> None:
    (word,) = tokenize(text)
    assert isinstance(word, Word) and word.dynamic is dynamic


def test_line_continuation_and_comments() -> None:
    assert words("ls \\\n-la # not > a redirect") == ["ls", "-la"]
    assert words("echo a#b") == ["echo", "a#b"]


@pytest.mark.parametrize(
    ("command", "message"),
    [("echo 'a", "unterminated single quote"),
     ('echo "a', "unterminated double quote"),
     ("echo `a", "unterminated backquote"),
     ("echo $(a", "unterminated"),
     ("echo $'a", "unterminated $'"),
     ("echo ${a", "unterminated ${"),
     ("cat <<EOF\na", "unterminated here-document"),
     ("echo \\", "lone backslash"),
     ("echo $((1))", "arithmetic"),
     ("echo $[1]", "arithmetic"),
     ("echo ${a[0]}", "not analyzed"),
     ("ls >", "no target"),
     ("echo ${x:-'q'}", "quoting inside ${...}")],
)
def test_tokenizer_refuses_what_it_cannot_read_exactly(command: str, message: str) -> None:
    with pytest.raises(ShellSyntaxError) as error:
        tokenize(command)
    assert message in str(error.value)


# Quoting-heavy static words, compared with the argv a real bash builds for them.
BASH_WORDS = [
    "'a b' \"c d\" e\\ f",
    "\"a\\\"b\" 'it'\\''s' \"x\\\\y\" \"\\$HOME\" \"a\\q\"",
    "$'tab\\there' $'\\x41\\101' $'esc\\'q' $'\\z'",
    "a\"b\"'c'd",
    "\"a;b\" 'c|d' \"e&&f\" \"g>h\" \\; \\|",
    "\\# not#comment",
    "a\\\nb",
    "{} x{ y} '{a,b}'",
    "'$(not run)' \"\\$(nor this)\" \\$HOME",
    "$\"translated\"",
    "héllo 'wörld' \"日本\"",
    "-- -n --foo=bar",
]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("line", BASH_WORDS)
def test_static_words_match_the_argv_bash_builds(line: str, tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8"}
    completed = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", f"printf '%s\\0' {line}"],
        capture_output=True, check=True, cwd=tmp_path, env=env, timeout=10,
    )
    from_bash = completed.stdout.decode().split("\0")[:-1]
    assert words(line) == from_bash


# -- parser ----------------------------------------------------------------------------------


def test_lists_pipelines_and_background_are_grouped() -> None:
    script = parse(tokenize("ls | wc -l && echo ok; pwd &"))
    first, second = script.statements
    assert [c.words[0].text for c in first.commands if isinstance(c, SimpleCommand)] == [
        "ls", "wc", "echo"
    ]
    assert not first.background and second.background


def test_subshells_groups_and_their_redirections() -> None:
    (statement,) = parse(tokenize("( ls ) > out")).statements
    (subshell,) = statement.commands
    assert isinstance(subshell, Compound) and subshell.kind == "subshell"
    assert subshell.redirects[0].target.text == "out"
    (group_statement,) = parse(tokenize("{ ls; }")).statements
    assert isinstance(group_statement.commands[0], Compound)


def test_assignments_come_only_before_the_command_name() -> None:
    (statement,) = parse(tokenize("A=1 B=2 env C=3")).statements
    (command,) = statement.commands
    assert isinstance(command, SimpleCommand)
    assert [w.text for w in command.assignments] == ["A=1", "B=2"]
    assert [w.text for w in command.words] == ["env", "C=3"]


@pytest.mark.parametrize("command", ["ls |", "| ls", "ls && ", ")", "(ls", "{ ls", "f() { ls; }",
                                     "( )", "ls; ;"])
def test_invalid_syntax_is_refused(command: str) -> None:
    with pytest.raises(ShellSyntaxError):
        parse(tokenize(command))
