"""``manage.py demo [--json]``: a demo team to try confab with, created idempotently.

alice (owner), bob (member) and carol (viewer) in "Demo team", with fresh passwords each time
it runs; a staff user "admin" for the admin site; a room with a conversation alice started; the
offline scripted model (served by fakellm at ``CONFAB_FAKELLM_URL``) as the team's default, plus
a real provider for each API key found in the environment; the team's wiki gets a few pages by alice
in one commit while it is empty (:data:`WIKI_PAGES`). ``--json`` prints exactly
``{"team": {"id"}, "room": {"id"}, "conversation": {"id"}, "conversations": [{"id",
"agent_mode", "title"}, ...], "users": {"alice": {"id", "username", "password", "token"},
"bob": {...}, "carol": {...}}, "admin": {"username", "password"}}`` on one line, with fresh API
tokens (and the admin's fresh password: every run rotates it). ``conversation`` is the demo's
``always`` conversation; ``conversations`` lists it and the ``mention`` one (:data:`CHAT_TITLE`).
"""

from __future__ import annotations

import json
import os
import secrets
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from apps.accounts.models import Membership, Role, Team, User
from apps.accounts.services import api_token_create
from apps.integrations.demo import ensure_demo_models
from apps.rooms.models import AgentMode, Conversation, Room
from apps.rooms.services.rooms import conversation_set_agent_mode
from apps.wiki.authors import person_author
from apps.wiki.stores import store_for

PEOPLE = (("alice", "Alice", Role.OWNER), ("bob", "Bob", Role.MEMBER),
          ("carol", "Carol", Role.VIEWER))
TEAM_SLUG = "demo-team"
CHAT_TITLE = "Team chat"
"""The demo's ``mention`` conversation: the people talk, the agent answers when called."""
WIKI_PAGES = {
    "Home.md": (
        "# Demo team wiki\n\n"
        "Welcome! This wiki is a git repository: every change is a commit by the person who "
        "made it, or by the agent for the person who asked.\n\n"
        "- [Deploy runbook](Runbooks/Deploy.md)\n"
        "- [指南](指南.md): page names can be in any script\n\n"
        "Clone it with a personal API token:\n\n"
        "    git -c http.extraHeader=\"Authorization: Bearer <token>\" \\\n"
        "        clone http://HOST/wiki/{team_id}.git\n"
    ),
    "Runbooks/Deploy.md": (
        "# Deploy\n\n"
        "1. Check that the build is green.\n"
        "2. Run `make deploy`.\n"
        "3. Watch the error rate for ten minutes; roll back if it climbs.\n\n"
        "Back to [Home](../Home.md).\n"
    ),
    "指南.md": (
        "# 指南\n\n"
        "这是团队的维基：每次修改都是一次 git 提交。\n\n"
        "- 在浏览器中编辑页面，查看历史和差异。\n"
        "- 让智能体搜索、阅读和更新页面。\n\n"
        "返回[首页](Home.md)。\n"
    ),
}
"""The demo wiki's first commit, by alice (written only while the wiki is empty; ``{team_id}``
is filled in)."""


class Command(BaseCommand):
    help = "Create (or refresh) the demo team, its people, a room and the offline model."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="print ids and credentials "
                            "as JSON, for scripts and tests")

    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():
            result, admin_password = self._create()
        _seed_wiki(Team.objects.get(pk=result["team"]["id"]),
                   User.objects.get(pk=result["users"]["alice"]["id"]))
        if options["json"]:
            self.stdout.write(json.dumps(
                {**result, "admin": {"username": "admin", "password": admin_password}}))
            return
        self.stdout.write("Demo team ready. Sign in as:")
        for name, person in result["users"].items():
            role = dict((p[0], p[2]) for p in PEOPLE)[name]
            self.stdout.write(f"  {name:6} {person['password']}   ({role.label.lower()})")
        self.stdout.write(f"  admin  {admin_password}   (site staff: /admin/)")

    def _create(self) -> tuple[dict[str, Any], str]:
        team = Team.objects.filter(slug=TEAM_SLUG).first() or Team.objects.create(
            name="Demo team", slug=TEAM_SLUG)
        users: dict[str, Any] = {}
        for username, shown, role in PEOPLE:
            user, password = _person(username, shown)
            Membership.objects.update_or_create(team=team, user=user, defaults={"role": role})
            _, token = api_token_create(user=user, name="demo")
            users[username] = {"id": user.pk, "username": username, "password": password,
                               "token": token}
        admin, admin_password = _person("admin", "Admin", staff=True)
        room = Room.objects.filter(team=team, name="General").first() or Room.objects.create(
            team=team, name="General", created_by=admin)
        alice = User.objects.get(pk=users["alice"]["id"])
        conversation = _conversation(room, alice, "Welcome", AgentMode.ALWAYS)
        chat = _conversation(room, alice, CHAT_TITLE, AgentMode.MENTION)
        # The offline model's address: as given, else kept from an earlier run (so a second
        # `demo --json` does not move a server started on other ports).
        given = os.environ.get("CONFAB_FAKELLM_URL") or os.environ.get("CONFAB_FAKELLM_URL_FILE")
        ensure_demo_models(team, fakellm_url=settings.CONFAB["FAKELLM_URL"] if given else None)
        listed = [{"id": c.pk, "agent_mode": c.agent_mode, "title": c.title}
                  for c in (conversation, chat)]
        return ({"team": {"id": team.pk}, "room": {"id": room.pk},
                 "conversation": {"id": conversation.pk}, "conversations": listed,
                 "users": users}, admin_password)


def _conversation(room: Room, alice: User, title: str, mode: AgentMode) -> Conversation:
    """The room's first conversation titled ``title``, created by alice if there is none, in
    ``mode`` (switched back, as alice, if someone switched it: the demo has one of each)."""
    conversation = Conversation.objects.filter(room=room, title=title).order_by("id").first()
    if conversation is None:
        conversation = Conversation.objects.create(room=room, title=title, created_by=alice,
                                                   agent_mode=mode)
    elif conversation.agent_mode != mode:
        conversation_set_agent_mode(conversation=conversation, agent_mode=mode, by=alice)
        conversation.agent_mode = mode
    if conversation.created_by_id is None:  # made by an older demo: it is alice's
        Conversation.objects.filter(pk=conversation.pk).update(created_by=alice)
    return conversation


def _seed_wiki(team: Team, alice: User) -> None:
    """The demo pages in one commit by alice, unless the wiki has commits already (a re-run,
    or pages people wrote: never overwritten)."""
    store = store_for(team)
    if store.head() is None:
        pages = {path: text.replace("{team_id}", str(team.pk))
                 for path, text in WIKI_PAGES.items()}
        store.commit_files(pages, message="Start the demo wiki", author=person_author(alice))


def _person(username: str, shown: str, staff: bool = False) -> tuple[User, str]:
    """The user, with a fresh password (returned: the only time it is visible)."""
    user = User.objects.filter(username=username).first() or User(username=username)
    password = secrets.token_urlsafe(9)
    user.display_name = shown
    user.is_staff = user.is_superuser = staff
    user.set_password(password)
    user.save()
    return user, password
