"""What the database knows of a team's wiki: that its repository exists.

The repository itself lives on disk (``stores.py``); this row, kept in the database with the
team, is what tells a lost repository (an unmounted volume, a bad restore) from a wiki nobody
wrote yet, so the store answers the first as damage instead of starting a fresh one over it.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from apps.accounts.models import Team

__all__ = ["WikiRepository"]


class WikiRepository(models.Model):
    """The team's wiki repository was created (on its first commit)."""

    team = models.OneToOneField(Team, verbose_name=_("team"), on_delete=models.CASCADE,
                                primary_key=True, related_name="wiki_repository")
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("wiki repository")
        verbose_name_plural = _("wiki repositories")

    def __str__(self) -> str:
        return f"wiki of team {self.team_id}"
