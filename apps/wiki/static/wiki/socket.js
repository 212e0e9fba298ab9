// The wiki socket (apps/wiki/consumers.py): /ws/teams/<id>/wiki/?path=<page>. It only sends:
// {"type": "wiki_page", path, blob, commit, author} first (the page as it is now, so a page
// that reconnects notices what it missed), then {"type": "wiki_changed", path, commit, author,
// action, from} after every commit to the team's wiki. Reconnects with backoff after a loss;
// 4401 (signed out) and 4404 (not a member) end it.

const BACKOFF_MS = [500, 1000, 2000, 4000, 8000, 15000];
const CLOSE_NOT_AUTHENTICATED = 4401;
const CLOSE_NOT_FOUND = 4404;

export class WikiSocket {
  /**
   * @param {string} path  e.g. "/ws/teams/3/wiki/"
   * @param {string} pagePath  the page this window shows ("" for none)
   * @param {{onFrame: Function, onStatus: Function}} handlers
   *   onFrame(frame) for every frame; onStatus(state) with "open" | "reconnecting" |
   *   "not_found" | "not_authenticated".
   */
  constructor(path, pagePath, { onFrame, onStatus }) {
    this.path = path;
    this.pagePath = pagePath;
    this.onFrame = onFrame;
    this.onStatus = onStatus;
    this.ws = null;
    this.attempt = 0;
    this.timer = null;
    this.stopped = false;
    window.addEventListener("online", () => this.reconnectNow());
    document.addEventListener("visibilitychange", () => {
      if (!document.hidden) this.reconnectNow();
    });
  }

  url() {
    const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    const query = this.pagePath ? `?path=${encodeURIComponent(this.pagePath)}` : "";
    return `${scheme}//${window.location.host}${this.path}${query}`;
  }

  start() {
    const ws = new WebSocket(this.url());
    this.ws = ws;
    ws.addEventListener("open", () => {
      if (ws !== this.ws) return;
      this.attempt = 0;
      this.onStatus("open");
    });
    ws.addEventListener("message", (message) => {
      if (ws !== this.ws) return;
      let frame;
      try {
        frame = JSON.parse(message.data);
      } catch {
        return;
      }
      this.onFrame(frame);
    });
    ws.addEventListener("close", (event) => {
      if (ws === this.ws) this.closed(event);
    });
  }

  closed(event) {
    this.ws = null;
    if (this.stopped) return;
    if (event.code === CLOSE_NOT_FOUND || event.code === CLOSE_NOT_AUTHENTICATED) {
      this.stopped = true;
      this.onStatus(event.code === CLOSE_NOT_FOUND ? "not_found" : "not_authenticated");
      return;
    }
    this.onStatus("reconnecting");
    const base = BACKOFF_MS[Math.min(this.attempt, BACKOFF_MS.length - 1)];
    this.attempt += 1;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.start(), base / 2 + Math.random() * (base / 2));
  }

  reconnectNow() {
    if (this.stopped || this.ws) return;
    clearTimeout(this.timer);
    this.start();
  }

  /** Close as a network loss would (it reconnects). */
  drop() {
    if (this.ws) this.ws.close();
  }

  get isOpen() {
    return !!this.ws && this.ws.readyState === WebSocket.OPEN;
  }
}
