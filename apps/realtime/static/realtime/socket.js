// What every confab socket does in the browser (docs/protocol.md, "Connecting"): connect,
// reconnect with jittered backoff after any loss (at once when the network or the tab comes
// back), and stop for good on 4401 (signed out) and 4404 (not found). Subclasses say what the
// URL's query is and what a frame means.

const BACKOFF_MS = [500, 1000, 2000, 4000, 8000, 15000];
const CLOSE_NOT_AUTHENTICATED = 4401;
const CLOSE_NOT_FOUND = 4404;

export class ReconnectingSocket {
  /**
   * @param {string} path  e.g. "/ws/conversations/7/"
   * @param {Function} onStatus  onStatus(state, detail): "open", "reconnecting", and once for
   *   good "closed" with detail "not_found" | "not_authenticated"
   */
  constructor(path, onStatus) {
    this.path = path;
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

  /** The query string the next connection asks with ("" or "?..."). */
  query() {
    return "";
  }

  url() {
    const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    return `${scheme}//${window.location.host}${this.path}${this.query()}`;
  }

  start() {
    const ws = new WebSocket(this.url());
    this.ws = ws;
    ws.addEventListener("open", () => {
      if (ws !== this.ws) return;
      this.attempt = 0;
      this.opened();
    });
    ws.addEventListener("message", (message) => {
      if (ws !== this.ws) return;
      let frame;
      try {
        frame = JSON.parse(message.data);
      } catch {
        return;
      }
      this.receive(frame);
    });
    ws.addEventListener("close", (event) => {
      if (ws === this.ws) this.closed(event);
    });
  }

  /** The connection is open. */
  opened() {
    this.onStatus("open");
  }

  /** One parsed frame from the server. */
  receive(frame) {} // eslint-disable-line no-unused-vars

  closed(event) {
    this.ws = null;
    if (this.stopped) return;
    if (event.code === CLOSE_NOT_FOUND || event.code === CLOSE_NOT_AUTHENTICATED) {
      this.stopped = true;
      this.onStatus("closed", event.code === CLOSE_NOT_FOUND ? "not_found" : "not_authenticated");
      return;
    }
    this.onStatus("reconnecting");
    const base = BACKOFF_MS[Math.min(this.attempt, BACKOFF_MS.length - 1)];
    this.attempt += 1;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.start(), base / 2 + Math.random() * (base / 2));
  }

  /** Reconnect at once if the socket is down and waiting for its backoff. */
  reconnectNow() {
    if (this.stopped || this.ws) return;
    clearTimeout(this.timer);
    this.start();
  }

  /** Close the connection for good: no reconnect, no status change (the caller says why). */
  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.ws) this.ws.close();
  }

  /** Close the connection as a network loss would (it reconnects). */
  drop() {
    if (this.ws) this.ws.close();
  }

  /** Send a client frame; false when the socket is not open (nothing is sent). */
  send(frame) {
    if (!this.isOpen) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  get isOpen() {
    return !!this.ws && this.ws.readyState === WebSocket.OPEN;
  }
}
