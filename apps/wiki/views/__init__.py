"""The wiki in the browser (issue 11): server-rendered pages under ``/teams/<id>/wiki/``.

Thin like the room pages: reads go through :mod:`apps.wiki.selectors`, every write through
:mod:`apps.wiki.services` (which checks the role again and publishes ``wiki.changed``).
Markdown is rendered and sanitized here (:mod:`apps.wiki.rendering`); the editor's live
preview asks this server too, so one sanitizer decides what any page shows. The live "changed
by" banner comes over the wiki socket (:mod:`apps.wiki.consumers`).
"""

from apps.wiki.views.edit import edit, new_page, preview
from apps.wiki.views.history import diff, history, restore
from apps.wiki.views.manage import delete, rename, upload
from apps.wiki.views.pages import page, search, tree

__all__ = ["delete", "diff", "edit", "history", "new_page", "page", "preview", "rename",
           "restore", "search", "tree", "upload"]
