// The page's one connection to GET /api/events.
//
// Browsers allow few connections per host, so each page opens exactly one stream: the
// firehose (the flock page), one nest, or one list. Every event goes to the handlers
// registered with on(name) / onAny(); ids already seen are dropped, so a replay after a
// reconnect never shows anything twice.
//
// Reconnecting: when the stream breaks (the server restarted, the network dropped) the
// page closes it and opens a new one from the last id it saw (`?since=`, which the server
// treats like Last-Event-ID), backing off 1 s, 2 s, 4 s ... up to 10 s, and shows
// "reconnecting" until the new stream is open. Doing it here rather than leaving it to
// EventSource's own retry keeps one rule for every case: a firehose opened with a cursor
// would otherwise retry with its first cursor, and a stream the browser gives up on
// (readyState CLOSED) would stay closed.

// The contract's event names (docs/API.md); /api/state's capabilities add any others.
export const KNOWN_EVENTS = [
  "list.started", "item.triaged", "crow.flying", "crow.landed", "item.answered", "verdict",
  "trust.changed", "item.skipped", "requester.pranked", "list.finished", "crow.banter",
  "nest.created", "nest.message", "crow.quarantined", "crow.reinstated", "crow.hatched",
  "crow.retired",
];

const MAX_BACKOFF_MS = 10000;

export class Stream {
  /**
   * @param {object} opts
   * @param {Record<string,string>} [opts.params]  {list_id} or {nest_id}; none for the firehose
   * @param {number|null} [opts.since]  cursor for the first connection (null: the server's default)
   * @param {number} [opts.liveAfter]   events with a larger id happened while the page was open
   * @param {string[]} [opts.names]     event names to listen for (capabilities)
   * @param {HTMLElement|null} [opts.pill] the connection indicator
   */
  constructor({ params = {}, since = null, liveAfter = Infinity, names = [], pill = null, onReconnect = null } = {}) {
    this.onReconnect = onReconnect;
    this.params = params;
    this.lastId = since;
    this.liveAfter = liveAfter;
    this.names = [...new Set([...KNOWN_EVENTS, ...names])];
    this.pill = pill || document.getElementById("conn");
    this.handlers = new Map();
    this.anyHandlers = [];
    this.es = null;
    this.attempt = 0;
    this.timer = null;
    this.wasDown = false;
    window.addEventListener("online", () => this.reconnectSoon(0));
  }

  on(name, fn) {
    if (!this.handlers.has(name)) this.handlers.set(name, []);
    this.handlers.get(name).push(fn);
    return this;
  }

  onAny(fn) {
    this.anyHandlers.push(fn);
    return this;
  }

  url() {
    const q = new URLSearchParams(this.params);
    if (this.lastId !== null && this.lastId !== undefined) q.set("since", String(this.lastId));
    const s = q.toString();
    return `/api/events${s ? `?${s}` : ""}`;
  }

  start() {
    // The browser's word that the network dropped is taken at once: an EventSource on a
    // half-open connection may not notice for a long while. The stream is closed, the page
    // says "reconnecting", and it reconnects (replaying what it missed) as soon as the
    // network is back.
    window.addEventListener("offline", () => {
      if (this.es) this.es.close();
      this.wasDown = true;
      this.reconnectSoon();
    });
    window.addEventListener("online", () => {
      if (this.wasDown) this.reconnectSoon(0);
    });
    this.open();
    return this;
  }

  open() {
    clearTimeout(this.timer);
    this.timer = null;
    this.setState(this.wasDown ? "reconnecting" : "connecting");
    const es = new EventSource(this.url());
    this.es = es;
    es.onopen = () => {
      if (this.es !== es) return;
      this.attempt = 0;
      if (this.wasDown) {
        this.wasDown = false;
        this.setState("live", "live again");
        // The missed events replay on this stream; anything else the page shows (budgets,
        // deadlines) is read again.
        if (this.onReconnect) this.onReconnect();
        setTimeout(() => { if (this.es === es && es.readyState === 1) this.setState("live"); }, 5000);
      } else {
        this.setState("live");
      }
    };
    es.onerror = () => {
      if (this.es !== es) return;
      es.close();
      this.wasDown = true;
      this.reconnectSoon();
    };
    const deliver = (name) => (e) => this.deliver(name, e);
    for (const name of this.names) es.addEventListener(name, deliver(name));
    es.onmessage = deliver("message");
    es.addEventListener("stream.reset", (e) => this.onReset(e));
  }

  /** The server says this page's cursor is past every event it ever had (its database was
   * reset or restored from an older copy, docs/STREAM.md): what the page shows belongs to
   * another history, and new events would look already seen. Read everything again, once
   * a minute at most. A retention reset needs nothing: the page shows what the server kept. */
  onReset(e) {
    let data = {};
    try {
      data = JSON.parse(e.data);
    } catch {
      return;
    }
    if (data.reason !== "ahead") return;
    this.lastId = null;
    const last = Number(sessionStorage.getItem("crows:reset-reload") || 0);
    if (Date.now() - last < 60_000) return;
    sessionStorage.setItem("crows:reset-reload", String(Date.now()));
    this.setState("reconnecting", "the server's history changed: reloading…");
    setTimeout(() => window.location.reload(), 800);
  }

  reconnectSoon(delay) {
    if (this.timer) clearTimeout(this.timer);
    const wait = delay ?? Math.min(MAX_BACKOFF_MS, 1000 * 2 ** this.attempt);
    this.attempt += 1;
    this.setState("reconnecting", `reconnecting${this.attempt > 1 ? ` (try ${this.attempt})` : ""}…`);
    this.timer = setTimeout(() => this.open(), wait);
  }

  deliver(name, e) {
    const id = e.lastEventId ? Number(e.lastEventId) : null;
    if (id !== null && this.lastId !== null && id <= this.lastId) return;
    let data;
    try {
      data = JSON.parse(e.data);
    } catch {
      console.warn("crows: an event with unreadable data was skipped", name, e.data);
      return;
    }
    if (id !== null) this.lastId = id;
    const event = { id, name, data, live: id === null || id > this.liveAfter };
    for (const fn of this.handlers.get(name) || []) this.safely(fn, event);
    for (const fn of this.anyHandlers) this.safely(fn, event);
    // The waiting count on every page (waiting.js) listens here instead of opening a
    // second stream: a page keeps to one connection.
    if (event.live) window.dispatchEvent(new CustomEvent("crows:event", { detail: event }));
  }

  safely(fn, event) {
    try {
      fn(event);
    } catch (err) {
      // A drawing bug must not stop the stream; it is still reported, never swallowed.
      console.warn("crows: a handler failed on", event.name, err);
      import("./notify.js").then(({ toast }) => toast(`The page could not show a ${event.name} event: ${err.message}`, "error"));
    }
  }

  setState(state, text) {
    if (!this.pill) return;
    const words = { connecting: "connecting…", live: "live", reconnecting: "reconnecting…" };
    this.pill.dataset.state = state;
    const label = this.pill.querySelector(".conn-text");
    if (label) label.textContent = text || words[state] || state;
    this.pill.title = state === "live"
      ? "Following the flock's event stream"
      : "The event stream broke; the page is reconnecting and will replay what it missed";
  }
}
