// The wiki pages' entry: the wiki socket and its "changed by X" banner on every wiki page, and
// the editor on the editor and the conflict screen. Data comes from #wiki's data-* attributes
// (no inline script: the CSP forbids it).

import { setupEditor } from "./editor.js";
import { describe, showBanner } from "./live.js";
import { WikiSocket } from "./socket.js";

function start(root) {
  const mode = root.dataset.mode;
  const banner = root.querySelector("#wiki-live");
  const page = {
    path: root.dataset.path || "",
    blob: root.dataset.blob ?? null, // null: this page (history, diff, …) shows no version
    commit: root.dataset.commit || "",
    me: root.dataset.me || "",
    teamId: root.dataset.teamId,
    pageUrl: root.dataset.pageUrl || window.location.pathname,
  };
  let saving = false;

  const form = document.getElementById("wiki-editor");
  const editor = form ? setupEditor(form, { onSubmit: () => { saving = true; } }) : null;

  const socket = new WikiSocket(root.dataset.socketPath,
                                mode === "tree" ? "" : page.path, {
    onFrame(frame) {
      if (saving || root.dataset.oldRev) return; // leaving, or reading history on purpose
      const parts = describe(frame, mode, page);
      if (!parts) return;
      showBanner(banner, frame.action || "changed", parts);
      root.dataset.changedBy = frame.author || "";
    },
    onStatus(state, detail) {
      root.dataset.socket = detail || state; // "open", "reconnecting", "not_found"...
    },
  });

  window.confabWiki = { socket, editor, page }; // for debugging and the browser tests
  if (root.dataset.socketPath) socket.start();
}

const root = document.getElementById("wiki");
if (root) start(root);
