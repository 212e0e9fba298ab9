// Opening the room at one message: a search result links to /conversations/<id>/#message-<id>
// (the message's database id). Once the transcript holds that message — loading older pages
// until it does, at most MAX_PAGES of them — it is scrolled into view, marked (.focused) and
// given the focus. A message that is no longer there gets a notice instead.

const MAX_PAGES = 40;

function wantedId() {
  const match = /^#message-(\d+)$/.exec(window.location.hash);
  return match ? Number(match[1]) : null;
}

/**
 * @param {{store, renderer, loadHistory: Function}} room
 * @returns {Function} check(): call after each `state` and `history` frame
 */
export function setupMessageFocus({ store, renderer, loadHistory }) {
  const id = wantedId();
  let pages = 0;
  let done = id === null;

  function find() {
    for (const msg of store.messages.values()) if (msg.id === id) return msg;
    return null;
  }

  function show(msg, tries = 0) {
    // The renderer draws on the next animation frame: wait for the message's article.
    const article = renderer.articles.get(msg);
    if (!article || !article.isConnected) {
      if (tries < 30) requestAnimationFrame(() => show(msg, tries + 1));
      return;
    }
    article.classList.add("focused");
    article.tabIndex = -1;
    article.scrollIntoView({ block: "center" });
    article.focus({ preventScroll: true });
  }

  return function check() {
    if (done || !store.ready) return;
    const msg = find();
    if (msg) {
      done = true;
      requestAnimationFrame(() => show(msg));
    } else if (store.before === null || pages >= MAX_PAGES) {
      done = true;
      store.notice("focus", "warn", gettext("The message you were looking for is not in this conversation any more."));
      renderer.schedule();
    } else if (!store.loadingHistory) {
      pages += 1;
      loadHistory();
    }
  };
}
