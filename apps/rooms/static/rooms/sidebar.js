// The room's conversations beside the transcript (docs/protocol.md, "The sidebar"): newest
// first, which are running, who is in each, the current one marked. The socket sends a
// `sidebar` frame (every row) after the page subscribes, then `sidebar_conversation` (one row
// changed), `sidebar_removed` (archived or deleted) and `sidebar_presence` (who is where).
// These are rare frames: the list is drawn at once, not through the transcript's
// animation-frame batching. On a narrow screen the list
// folds behind the #sidebar-toggle button (room.css).

const LIMIT = 50; // rows shown at most, as the server sends (apps/rooms/sidebar.py)

function newestFirst(a, b) {
  return b.created_at.localeCompare(a.created_at) || b.id - a.id;
}

export class Sidebar {
  /** @param {HTMLElement} root  the #room element (holds #conversation-nav and the toggle) */
  constructor(root) {
    this.root = root;
    this.nav = root.querySelector("#conversation-nav");
    this.list = root.querySelector("#conversation-list");
    this.more = root.querySelector("#conversation-more");
    this.hasMore = false; // the room has more conversations than the newest LIMIT
    this.toggle = root.querySelector("#sidebar-toggle");
    this.current = Number(root.dataset.conversationId);
    this.urlPattern = this.nav ? this.nav.dataset.conversationUrl : "";
    this.rows = new Map(); // id -> {id, title, running, created_at}
    this.present = {}; // "<id>" -> [PERSON]
    if (this.toggle) this.toggle.addEventListener("click", () => this.setOpen(!this.open()));
  }

  open() {
    return this.toggle.getAttribute("aria-expanded") === "true";
  }

  setOpen(open) {
    this.toggle.setAttribute("aria-expanded", String(open));
    this.nav.classList.toggle("open", open);
    if (!open) return;
    // On a phone the list opens above the transcript, which is usually scrolled to its end:
    // bring it into view just below the sticky room header instead of behind it.
    const header = this.root.querySelector(".room-header");
    this.nav.style.scrollMarginTop = `${header ? header.offsetHeight : 0}px`;
    this.nav.scrollIntoView({ block: "start" });
  }

  /** Apply a `sidebar`, `sidebar_conversation` or `sidebar_presence` frame and redraw. */
  apply(frame) {
    if (!this.list) return;
    if (frame.type === "sidebar") {
      this.rows = new Map(frame.conversations.map((row) => [row.id, row]));
      this.hasMore = Boolean(frame.more);
    } else if (frame.type === "sidebar_conversation") {
      this.rows.set(frame.conversation.id, frame.conversation);
    } else if (frame.type === "sidebar_removed") {
      this.rows.delete(frame.conversation_id);
    } else if (frame.type === "sidebar_presence") {
      this.present = frame.present;
    }
    this.render();
  }

  render() {
    const sorted = [...this.rows.values()].sort(newestFirst);
    const rows = sorted.slice(0, LIMIT);
    const current = this.rows.get(this.current);
    if (current && !rows.includes(current)) rows.push(current); // never lose where you are
    this.list.replaceChildren(...rows.map((row) => this.item(row)));
    if (this.more) this.more.hidden = !(this.hasMore || sorted.length > LIMIT);
  }

  item(row) {
    const li = document.createElement("li");
    li.dataset.conversationId = String(row.id);
    li.dataset.running = String(row.running);
    const link = document.createElement("a");
    link.href = this.urlPattern.replace(/\/0\/$/, `/${row.id}/`);
    if (row.id === this.current) link.setAttribute("aria-current", "page");
    const title = document.createElement("span");
    title.className = "nav-title";
    title.textContent = row.title;
    title.title = row.title; // clipped to one line (finding.css): the whole title on hover
    link.append(title);
    if (row.running) {
      const running = document.createElement("span");
      running.className = "nav-running";
      running.textContent = gettext("running");
      link.append(running);
    }
    const people = this.present[String(row.id)] || [];
    if (people.length) {
      const who = document.createElement("span");
      who.className = "nav-people";
      who.textContent = people.map((p) => p.name).join(", ");
      who.title = interpolate(gettext("Here now: %(names)s"),
                              { names: who.textContent }, true);
      link.append(who);
    }
    li.append(link);
    return li;
  }
}
