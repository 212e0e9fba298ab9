"""A real ``git clone`` of a team wiki from a real Daphne (issue 9): ``manage.py demo`` seeds
the demo team's wiki, then the git client talks smart HTTP v2 to ``/wiki/<team id>.git`` with a
personal token in ``http.extraHeader``; a push is refused and leaves ``main`` as it was.

One server per module (SQLite and the in-memory layer in a temporary data directory, as a
laptop runs confab): migrate, demo, an outsider with a team of their own, Daphne.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.harness import ProcessStack
from tests.services.django_proc import django_env, last_json, run_manage, run_script

PERSONAS = ("anonymous", "charlie", "carol", "bob", "alice")
CLONES = (False, False, True, True, True)
DEMO_PAGES = {"Home.md", "Runbooks/Deploy.md", "指南.md"}


@dataclass
class Server:
    url: str
    env: dict[str, str]
    team_id: int
    tokens: dict[str, str]
    repository: Path  # the bare repository on the server's disk


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("confab")
    env = django_env(data_dir=data, CONFAB_FAKELLM_URL="http://127.0.0.1:9")
    run_manage(["migrate", "-v0"], env)
    demo = json.loads(run_manage(["demo", "--json"], env).stdout)
    outsider = last_json(run_script(
        "import json\n"
        "from apps.accounts.models import User\n"
        "from apps.accounts.services import api_token_create, team_create\n"
        "user = User.objects.create_user(username='charlie', display_name='Charlie')\n"
        "team_create(name='Globex', owner=user)\n"
        "print(json.dumps({'token': api_token_create(user=user, name='t')[1]}))\n", env))
    tokens = {name: person["token"] for name, person in demo["users"].items()}
    tokens["charlie"] = outsider["token"]
    with ProcessStack(env, data / "stack") as stack:
        daphne = stack.start_daphne()
        team_id = demo["team"]["id"]
        yield Server(daphne.url, env, team_id, tokens, data / "wiki" / f"{team_id}.git")


def git(*args: str, cwd: Path | None = None, token: str | None = None,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    """The git client as a person runs it, with no configuration of this machine's."""
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd or "/nonexistent"), "LC_ALL": "C",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_TERMINAL_PROMPT": "0", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    header = ["-c", f"http.extraHeader=Authorization: Bearer {token}"] if token else []
    return subprocess.run(["git", *header, *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=60, check=check)


def files_in(checkout: Path) -> set[str]:
    return set(git("ls-files", "-z", cwd=checkout).stdout.strip("\0").split("\0"))


def server_main(server: Server) -> str:
    return git(f"--git-dir={server.repository}", "rev-parse", "refs/heads/main").stdout.strip()


@pytest.mark.parametrize("persona", PERSONAS)
def test_members_clone_the_wiki_with_a_token_and_nobody_else_can(server: Server, persona,
                                                                 tmp_path: Path) -> None:
    url = f"{server.url}/wiki/{server.team_id}.git"
    result = git("clone", "-q", url, str(tmp_path / "wiki"), cwd=tmp_path,
                 token=server.tokens.get(persona), check=False)
    if CLONES[PERSONAS.index(persona)]:
        assert result.returncode == 0, result.stderr
        checkout = tmp_path / "wiki"
        assert files_in(checkout) == DEMO_PAGES
        assert (checkout / "指南.md").read_text(encoding="utf-8").startswith("# 指南")
        log = git("log", "--format=%an|%s", "main", cwd=checkout).stdout.splitlines()
        assert log == ["Alice|Start the demo wiki"]
    else:
        assert result.returncode != 0
        assert "not found" in result.stderr.lower() or "404" in result.stderr
        assert not (tmp_path / "wiki" / "Home.md").exists()


def test_a_partial_clone_works_too(server: Server, tmp_path: Path) -> None:
    result = git("clone", "-q", "--filter=blob:none", f"{server.url}/wiki/{server.team_id}.git",
                 str(tmp_path / "wiki"), cwd=tmp_path, token=server.tokens["carol"],
                 check=False)
    assert result.returncode == 0, result.stderr
    assert files_in(tmp_path / "wiki") == DEMO_PAGES


def test_a_push_is_refused_and_main_stays_where_it_was(server: Server, tmp_path: Path) -> None:
    before = server_main(server)
    checkout = tmp_path / "wiki"
    token = server.tokens["alice"]
    git("clone", "-q", f"{server.url}/wiki/{server.team_id}.git", str(checkout), cwd=tmp_path,
        token=token)
    (checkout / "Home.md").write_text("# Pushed over git\n", encoding="utf-8")
    git("commit", "-q", "-am", "Try a push", cwd=checkout)
    pushed = git("push", "origin", "main", cwd=checkout, token=token, check=False)
    assert pushed.returncode != 0
    assert "403" in pushed.stderr, pushed.stderr
    assert server_main(server) == before
    remote = git("ls-remote", f"{server.url}/wiki/{server.team_id}.git", "refs/heads/main",
                 cwd=tmp_path, token=token).stdout.split()
    assert remote == [before, "refs/heads/main"]


def test_running_demo_again_keeps_the_wiki_as_it_is(server: Server) -> None:
    before = server_main(server)
    run_manage(["demo", "--json"], server.env)
    assert server_main(server) == before
    count = git(f"--git-dir={server.repository}", "rev-list", "--count", "main").stdout
    assert count.strip() == "1"
