"""Conversation workspaces: where they live, created on first use, deleted with the
conversation, and never anything outside the workspaces directory."""

from __future__ import annotations

import pytest

from apps.rooms.workspaces import ensure_workspace, workspace_delete, workspace_path

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def workspaces_dir(settings, tmp_path):
    settings.WORKSPACES_DIR = tmp_path / "workspaces"
    return settings.WORKSPACES_DIR


def test_a_workspace_is_made_on_first_use_under_team_and_conversation(workspaces_dir,
                                                                      conversation):
    path = workspace_path(conversation)
    assert path == workspaces_dir.resolve() / str(conversation.room.team_id) / str(
        conversation.pk)
    assert not path.exists()
    assert ensure_workspace(conversation) == path
    assert path.is_dir() and (path.stat().st_mode & 0o777) == 0o700
    assert ensure_workspace(conversation) == path  # again: same place, no error


def test_deleting_a_conversation_deletes_its_workspace(token_client, alice, conversation,
                                                       django_capture_on_commit_callbacks):
    path = ensure_workspace(conversation)
    (path / "notes").mkdir()
    (path / "notes" / "a.txt").write_text("kept until the conversation goes")
    with django_capture_on_commit_callbacks(execute=True):
        response = token_client(alice).delete(f"/api/conversations/{conversation.pk}")
    assert response.status_code == 204
    assert not path.exists()
    assert path.parent.is_dir()  # the team's directory stays


def test_a_refused_deletion_keeps_the_workspace(token_client, carol, conversation,
                                                django_capture_on_commit_callbacks):
    path = ensure_workspace(conversation)
    with django_capture_on_commit_callbacks(execute=True):
        response = token_client(carol).delete(f"/api/conversations/{conversation.pk}")
    assert response.status_code == 403
    assert path.is_dir()


def test_a_symlink_inside_is_removed_not_followed(workspaces_dir, conversation, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep")
    path = ensure_workspace(conversation)
    (path / "link").symlink_to(outside)
    workspace_delete(path)
    assert not path.exists()
    assert (outside / "precious").read_text() == "keep"


def test_nothing_outside_the_workspaces_tree_is_deleted(workspaces_dir, conversation,
                                                        tmp_path):
    path = ensure_workspace(conversation)
    elsewhere = tmp_path / "1" / "2"
    elsewhere.mkdir(parents=True)
    escape = path.parent / "evil"
    escape.symlink_to(tmp_path / "1")
    for target in (workspaces_dir, path.parent, elsewhere, path / ".." / ".." / "..",
                   escape, escape / "2", path / "deeper"):
        with pytest.raises(ValueError):
            workspace_delete(target)
    assert path.is_dir() and elsewhere.is_dir()


def test_deleting_a_missing_workspace_is_fine(conversation):
    workspace_delete(workspace_path(conversation))
