"""Where a team's wiki lives: ``WIKI_DIR/<team id>.git``, from the database id alone, never from
request text; its snapshots under ``WIKI_DIR/snapshots/<team id>/`` (outside every workspace)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from apps.accounts.models import Team
from apps.engine.wiki import WikiLimits, WikiStore
from apps.wiki.models import WikiRepository

__all__ = ["store_for", "wiki_limits"]


def wiki_limits() -> WikiLimits:
    """The limits the settings choose (``CONFAB_WIKI_*``)."""
    conf = settings.CONFAB
    return WikiLimits(page_bytes=conf["WIKI_PAGE_BYTES"],
                      attachment_bytes=conf["WIKI_ATTACHMENT_BYTES"],
                      quota_bytes=conf["WIKI_QUOTA_BYTES"])


def store_for(team: Team | int) -> WikiStore:
    """The wiki of ``team`` (a Team or its primary key, as the database gave it)."""
    team_id = int(team.pk if isinstance(team, Team) else team)
    root = Path(settings.WIKI_DIR).resolve()
    return WikiStore(root / f"{team_id}.git", limits=wiki_limits(),
                     snapshots=root / "snapshots" / str(team_id), record=_Record(team_id))


class _Record:
    """The store's :class:`~apps.engine.wiki.WikiRecord`: a WikiRepository row. Called by the
    store's synchronous methods only (worker threads, never the event loop)."""

    def __init__(self, team_id: int) -> None:
        self.team_id = team_id

    def known(self) -> bool:
        return WikiRepository.objects.filter(team_id=self.team_id).exists()

    def record(self) -> None:
        WikiRepository.objects.get_or_create(team_id=self.team_id)
