// The "changed by X" banner (#wiki-live): what a wiki_page or wiki_changed frame means for the
// page this window shows. Built from text nodes only: names and paths never become markup.

/** Replace the banner's content with `parts` (strings, or {text, href} for links). */
export function showBanner(banner, kind, parts) {
  const nodes = parts.map((part) => {
    if (typeof part === "string") return document.createTextNode(part);
    const el = document.createElement(part.href ? "a" : "strong");
    el.textContent = part.text;
    if (part.href) {
      el.href = part.href;
      if (part.action) el.dataset.action = part.action;
    }
    return el;
  });
  banner.replaceChildren(...nodes);
  banner.dataset.kind = kind;
  banner.hidden = false;
}

/** The page URL of `path`, from this page's own URL for `current` (same prefix). */
export function pageUrlFor(teamId, path) {
  const encoded = path.split("/").map(encodeURIComponent).join("/");
  return `/teams/${teamId}/wiki/${encoded}`;
}

function who(author, me) {
  if (!author) return { text: gettext("someone") };
  return { text: author === me ? gettext("you (in another window)") : author };
}

/**
 * The banner's parts for `frame` on a page in `mode` ("read", "edit", "conflict", "tree"),
 * or null when the frame is nothing to show here.
 * `page`: {path, blob, commit, me, teamId, pageUrl}.
 */
export function describe(frame, mode, page) {
  if (frame.type === "wiki_page") {
    if (!page.path || frame.path !== page.path) return null;
    // A page that shows no version of its own (history, diff, rename) has nothing the state
    // frame could contradict; it hears of real changes by their wiki_changed events.
    if (page.blob === null) return null;
    if ((frame.blob || "") === page.blob) return null;
    if (!frame.blob) return [gettext("This page was deleted since you opened it.")];
    return [gettext("This page was changed by "), who(frame.author, page.me),
            gettext(" since you opened it. "), ...followUp(mode, page)];
  }
  if (frame.type !== "wiki_changed") return null;
  if (mode === "tree") {
    const reload = { text: gettext("Reload the tree"), href: window.location.pathname,
                     action: "reload" };
    if (frame.action === "rename" && frame.from) {
      return [{ text: frame.from }, gettext(" was renamed to "), { text: frame.path },
              gettext(" by "), who(frame.author, page.me), gettext(". "), reload];
    }
    return [{ text: frame.path }, verb(frame.action), who(frame.author, page.me), gettext(". "),
            reload];
  }
  const moved = frame.action === "rename" && frame.from === page.path;
  if (frame.path !== page.path && !moved) return null;
  if (frame.commit && frame.commit === page.commit) return null; // what this page shows
  if (moved) {
    return [gettext("This page was renamed to "),
            { text: frame.path, href: pageUrlFor(page.teamId, frame.path), action: "reload" },
            gettext(" by "), who(frame.author, page.me),
            mode === "read" ? gettext(".") : gettext(". Saving here would create the old name again.")];
  }
  if (frame.action === "delete") {
    return [gettext("This page was deleted by "), who(frame.author, page.me),
            mode === "read" ? gettext(".") : gettext(". Saving here creates it again.")];
  }
  return [gettext("This page was changed by "), who(frame.author, page.me), gettext(" just now. "),
          ...followUp(mode, page)];
}

function followUp(mode, page) {
  if (mode === "read") return [{ text: gettext("Reload"), href: page.pageUrl, action: "reload" }];
  return [gettext("Your save will merge with their change; where the two overlap you choose what to keep.")];
}

function verb(action) {
  // " was <verb> by ": whole phrases, so each language orders its own words
  return { delete: gettext(" was deleted by "), rename: gettext(" was renamed by "),
           restore: gettext(" was restored by ") }[action] || gettext(" was changed by ");
}
