"""One working directory per conversation, where the agent's file and shell tools run.

Layout: ``settings.WORKSPACES_DIR / <team_id> / <conversation_id>``. ``WORKSPACES_DIR`` defaults
to ``<CONFAB_DATA_DIR>/workspaces``, never inside the code tree. A workspace is created on first
use (:func:`ensure_workspace`) and deleted with its conversation (:func:`workspace_delete`, which
refuses to remove anything that is not a workspace directory under ``WORKSPACES_DIR``).

Several workers on one host: the path is derived from ids only, so every server and run-worker
process computes the same directory for a conversation, and whichever worker hosts the
conversation's run finds the files the previous run left. The database allows one active run per
conversation (``one_active_run_per_conversation``), so only one process writes a workspace at a
time; creation is ``mkdir(exist_ok=True)`` and safe to race. All processes must run as the same
user and see the same ``CONFAB_WORKSPACES_DIR``; to spread workers over several hosts, put that
directory on storage every host mounts at the same path. A conversation with an active run cannot
be deleted, so a workspace is never removed under a running tool.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from django.conf import settings

from apps.rooms.models import Conversation

__all__ = ["ensure_workspace", "workspace_delete", "workspace_path"]

logger = logging.getLogger(__name__)


def _root() -> Path:
    """The resolved ``WORKSPACES_DIR``."""
    return Path(settings.WORKSPACES_DIR).resolve()


def workspace_path(conversation: Conversation) -> Path:
    """Where the conversation's workspace lives (it may not exist yet)."""
    return _root() / str(conversation.room.team_id) / str(conversation.pk)


def ensure_workspace(conversation: Conversation) -> Path:
    """The conversation's workspace, created (owner-only permissions) if missing."""
    path = workspace_path(conversation)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def workspace_delete(path: Path) -> None:
    """Remove the workspace directory ``path`` and everything in it; a missing one is fine.

    Raises ValueError for a path that is not exactly two levels below ``WORKSPACES_DIR``
    (``<team_id>/<conversation_id>``) or that is a symlink: a deletion never leaves the
    workspaces tree. Symlinks inside the workspace are removed, not followed.
    """
    root = _root()
    path = Path(path)
    target = path.resolve()
    if path.is_symlink() or target.parent.parent != root:
        raise ValueError(f"refusing to delete {path}: not a workspace under {root}")
    if not target.exists():
        return
    shutil.rmtree(target)
    logger.info("deleted workspace %s", target)
