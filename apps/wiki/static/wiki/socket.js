// The wiki socket (apps/wiki/consumers.py): /ws/teams/<id>/wiki/?path=<page>, reconnecting as
// every socket does (../realtime/socket.js). It only sends: {"type": "wiki_page", path, blob,
// commit, author} first (the page as it is now, so a page that reconnects notices what it
// missed), then {"type": "wiki_changed", path, commit, author, action, from} after every
// commit to the team's wiki.

import { ReconnectingSocket } from "../realtime/socket.js";

export class WikiSocket extends ReconnectingSocket {
  /**
   * @param {string} path  e.g. "/ws/teams/3/wiki/"
   * @param {string} pagePath  the page this window shows ("" for none)
   * @param {{onFrame: Function, onStatus: Function}} handlers
   *   onFrame(frame) for every frame; onStatus(state, detail) as ReconnectingSocket says.
   */
  constructor(path, pagePath, { onFrame, onStatus }) {
    super(path, onStatus);
    this.pagePath = pagePath;
    this.onFrame = onFrame;
  }

  query() {
    return this.pagePath ? `?path=${encodeURIComponent(this.pagePath)}` : "";
  }

  receive(frame) {
    this.onFrame(frame);
  }
}
