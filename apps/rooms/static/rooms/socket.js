// The conversation socket (docs/protocol.md): reconnects as every socket does
// (../realtime/socket.js), asking for `?after_seq=<last seq seen>` so the server sends exactly
// what was missed. Events are deduplicated by seq here: each seq reaches the room once, in
// order. An `hwm` frame (the log's last seq) beyond the last event seen means events were lost
// on the way: the socket reconnects and catches up the same way.

import { ReconnectingSocket } from "../realtime/socket.js";

export class RoomSocket extends ReconnectingSocket {
  /**
   * @param {string} path  e.g. "/ws/conversations/7/"
   * @param {{onFrame: Function, onStatus: Function, onOpen: Function}} handlers
   *   onFrame(frame) for the state frame, each new event (in seq order) and every other frame;
   *   onStatus(state, detail) with state "connecting" | "open" | "reconnecting" | "closed";
   *   onOpen() once the socket is open (resend what is unacknowledged).
   */
  constructor(path, { onFrame, onStatus, onOpen }) {
    super(path, onStatus);
    this.onFrame = onFrame;
    this.onOpen = onOpen;
    this.lastSeq = null; // null until the state frame: then connect without after_seq
  }

  query() {
    return this.lastSeq === null ? "" : `?after_seq=${this.lastSeq}`;
  }

  start() {
    this.onStatus(this.lastSeq === null && this.attempt === 0 ? "connecting" : "reconnecting");
    super.start();
  }

  opened() {
    super.opened();
    this.onOpen();
  }

  receive(frame) {
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
}
