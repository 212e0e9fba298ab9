// The conversation socket (docs/protocol.md): connect, then reconnect with backoff after any
// loss, asking for `?after_seq=<last seq seen>` so the server sends exactly what was missed.
// Events are deduplicated by seq here: each seq reaches the room once, in order. An `hwm`
// frame (the log's last seq) beyond the last event seen means events were lost on the way:
// the socket reconnects and catches up the same way.

const BACKOFF_MS = [500, 1000, 2000, 4000, 8000, 15000];
const CLOSE_NOT_AUTHENTICATED = 4401;
const CLOSE_NOT_FOUND = 4404;

export class RoomSocket {
  /**
   * @param {string} path  e.g. "/ws/conversations/7/"
   * @param {{onFrame: Function, onStatus: Function, onOpen: Function}} handlers
   *   onFrame(frame) for the state frame, each new event (in seq order) and every other frame;
   *   onStatus(state, detail) with state "connecting" | "open" | "reconnecting" | "closed";
   *   onOpen() once the socket is open (resend what is unacknowledged).
   */
  constructor(path, { onFrame, onStatus, onOpen }) {
    this.path = path;
    this.onFrame = onFrame;
    this.onStatus = onStatus;
    this.onOpen = onOpen;
    this.lastSeq = null; // null until the state frame: then connect without after_seq
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
    const after = this.lastSeq === null ? "" : `?after_seq=${this.lastSeq}`;
    return `${scheme}//${window.location.host}${this.path}${after}`;
  }

  start() {
    this.onStatus(this.lastSeq === null && this.attempt === 0 ? "connecting" : "reconnecting");
    const ws = new WebSocket(this.url());
    this.ws = ws;
    ws.addEventListener("open", () => {
      if (ws !== this.ws) return;
      this.attempt = 0;
      this.onStatus("open");
      this.onOpen();
    });
    ws.addEventListener("message", (message) => {
      if (ws === this.ws) this.receive(message.data);
    });
    ws.addEventListener("close", (event) => {
      if (ws === this.ws) this.closed(event);
    });
  }

  receive(data) {
    let frame;
    try {
      frame = JSON.parse(data);
    } catch {
      return;
    }
    if (frame.type === "state") {
      this.lastSeq = frame.seq;
    } else if (frame.type === "event") {
      if (this.lastSeq !== null && frame.seq <= this.lastSeq) return; // seen already
      if (this.lastSeq !== null && frame.seq > this.lastSeq + 1) {
        this.drop(); // a hole: reconnect and let the server fill it from after_seq
        return;
      }
      this.lastSeq = frame.seq;
    } else if (frame.type === "hwm") {
      if (this.lastSeq !== null && frame.seq > this.lastSeq) this.drop(); // a lost tail
      return;
    }
    this.onFrame(frame);
  }

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

  /** Close the connection as a network loss would (it reconnects and catches up). */
  drop() {
    if (this.ws) this.ws.close();
  }

  /** Send a client frame; false when the socket is not open (nothing is sent). */
  send(frame) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  get isOpen() {
    return !!this.ws && this.ws.readyState === WebSocket.OPEN;
  }
}
