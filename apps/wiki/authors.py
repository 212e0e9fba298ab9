"""Who a wiki commit is by: always read from the database, never from a request or a model.

A person writes as themselves; the agent writes as "<handle> (for <person>)", with the person,
conversation, run and tool call in the message's trailers (issue 9, Authorship).
"""

from __future__ import annotations

from apps.accounts.models import User
from apps.engine.wiki import Author

__all__ = ["AGENT_HANDLE", "agent_author", "person_author"]

AGENT_HANDLE = "agent"
"""The name the team's agent commits under (the rooms' mention handle)."""


def _email(user: User) -> str:
    # Stable and never a real address: people's e-mail addresses stay out of a clonable repo.
    return f"user-{user.pk}@users.confab.invalid"


def person_author(user: User) -> Author:
    """``user`` as the author of a change made in the browser or over REST."""
    return Author(name=user.shown_name, email=_email(user),
                  trailers={"Confab-User": str(user.pk)})


def agent_author(user: User, *, conversation_id: int, run_id: int, tool_call_id: str,
                 handle: str = AGENT_HANDLE) -> Author:
    """The agent, acting for ``user`` (who started the run), as the author of a tool's write."""
    return Author(name=f"{handle} (for {user.shown_name})", email=_email(user), trailers={
        "Confab-User": str(user.pk),
        "Confab-Conversation": str(conversation_id),
        "Confab-Run": str(run_id),
        "Confab-Tool-Call": tool_call_id,
    })
