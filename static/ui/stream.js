// A page's view of the event log: its own backlog, then everything live.
//
// Every tab of the browser shares one live connection (stream_hub.js): a SharedWorker holds
// the firehose, and each page keeps what belongs to it. A page reads its own backlog once
// with `?replay=1` (its list's or nest's events from the first, or the firehose after its
// cursor), up to at least the id after which the shared stream delivers everything, then
// takes the live events from the shared stream: a nest page those of its nest, a list page
// those of its list, plus the crow events (a crow caged, reinstated, retired, hatched or
// changed) that every page shows whatever room they happened in. Ids already seen are
// dropped, so nothing shows twice. `onReady` runs once the backlog is drawn: until then a
// page says it is loading, never that it is empty.

// The contract's event names (docs/API.md); /api/state's capabilities add any others.
export const KNOWN_EVENTS = [
  "list.started", "item.triaged", "crow.flying", "crow.landed", "item.answered", "verdict",
  "trust.changed", "item.skipped", "requester.pranked", "list.finished", "crow.banter",
  "nest.created", "nest.message", "crow.quarantined", "crow.reinstated", "crow.hatched",
  "crow.retired", "crow.updated",
];

// Events about a crow itself: every page hears them live, whichever room they came from
// (docs/STREAM.md, "One connection per browser").
export const CROW_EVENTS = ["crow.quarantined", "crow.reinstated", "crow.retired", "crow.hatched", "crow.updated"];

const MAX_BACKOFF_MS = 10000;

/** The page's link to the shared hub: a SharedWorker's port, or a hub of its own. */
let link = null;
function hubLink() {
  if (link) return link;
  const listeners = new Set();
  const receive = (msg) => { for (const fn of listeners) fn(msg); };
  let send;
  if (typeof SharedWorker === "function") {
    const worker = new SharedWorker(new URL("./stream_worker.js", import.meta.url), { type: "module", name: "crows-stream" });
    worker.port.onmessage = (m) => receive(m.data);
    worker.port.start();
    send = (msg) => worker.port.postMessage(msg);
  } else {
    const local = import("./stream_hub.js").then(({ StreamHub }) => {
      const hub = new StreamHub();
      return { hub, tab: { send: (msg) => receive(msg) } };
    });
    send = (msg) => local.then(({ hub, tab }) => {
      if (msg.type === "hello") hub.join(tab, msg.names || []);
      else if (msg.type === "names") hub.addNames(msg.names || []);
      else if (msg.type === "online") hub.online();
      else if (msg.type === "offline") hub.offline();
    });
  }
  window.addEventListener("pagehide", () => send({ type: "bye" }));
  window.addEventListener("online", () => send({ type: "online" }));
  window.addEventListener("offline", () => send({ type: "offline" }));
  link = { send, listen: (fn) => listeners.add(fn) };
  return link;
}

export class Stream {
  /**
   * @param {object} opts
   * @param {Record<string,string>} [opts.params]  {list_id} or {nest_id}; none for the firehose
   * @param {number|null} [opts.since]  where this page's backlog starts (null: a keyed
   *   stream from its first event, the firehose from now)
   * @param {number} [opts.liveAfter]   events with a larger id happened while the page was open
   * @param {string[]} [opts.names]     event names to listen for (capabilities)
   * @param {HTMLElement|null} [opts.pill] the connection indicator
   * @param {Function} [opts.onReconnect] the shared stream came back after a break
   * @param {Function} [opts.onReady] the backlog is delivered (called once)
   */
  constructor({ params = {}, since = null, liveAfter = Infinity, names = [], pill = null, onReconnect = null, onReady = null } = {}) {
    this.onReconnect = onReconnect;
    this.onReady = onReady;
    this.params = params;
    this.lastId = since;
    this.liveAfter = liveAfter;
    this.names = [...new Set([...KNOWN_EVENTS, ...names])];
    this.pill = pill || document.getElementById("conn");
    this.handlers = new Map();
    this.anyHandlers = [];
    this.ready = false;
    this.buffer = [];
    this.replaying = null;
    this.attempt = 0;
    this.hubState = { state: "connecting", text: "" };
  }

  /** The pill says "live" only once this page's backlog is drawn and the shared stream is
   * open: before that the page is still connecting, whatever the other tabs see. */
  showState() {
    const { state, text } = this.hubState;
    if (state === "live" && !this.ready) this.setState("connecting");
    else this.setState(state, text);
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

  start() {
    const hub = hubLink();
    hub.listen((msg) => this.receive(msg));
    hub.send({ type: "hello", names: this.names });
    return this;
  }

  receive(msg) {
    switch (msg.type) {
      case "state":
        this.hubState = msg;
        this.showState();
        break;
      case "welcome":
        if (!this.ready && !this.replaying) this.catchUp(msg.after);
        break;
      case "event":
        if (this.ready) this.take(msg);
        else this.buffer.push(msg);
        break;
      case "reconnected":
        if (this.onReconnect) this.onReconnect();
        break;
      case "reset":
        this.onReset(msg.data);
        break;
      default:
        break;
    }
  }

  /** Whether a live event from the shared firehose belongs on this page. */
  mine(name, data) {
    if (this.params.nest_id) return data.nest_id === this.params.nest_id || CROW_EVENTS.includes(name);
    if (this.params.list_id) return data.list_id === this.params.list_id || CROW_EVENTS.includes(name);
    return true;
  }

  take({ id, name, data }) {
    let parsed;
    try {
      parsed = JSON.parse(data);
    } catch {
      console.warn("crows: an event with unreadable data was skipped", name, data);
      return;
    }
    if (!this.mine(name, parsed)) return;
    this.deliver(id, name, parsed);
  }

  /** Read this page's backlog after its cursor, up to at least `after` (the id after which
   * the shared stream delivers everything), then the events that waited meanwhile. */
  catchUp(after) {
    const cursor = this.lastId ?? (this.params.nest_id || this.params.list_id ? 0 : after);
    if (cursor >= after) {
      if (this.lastId === null) this.lastId = cursor;
      this.becomeReady();
      return;
    }
    const q = new URLSearchParams({ ...this.params, since: String(cursor), replay: "1" });
    const es = new EventSource(`/api/events?${q}`);
    this.replaying = es;
    for (const name of this.names) {
      es.addEventListener(name, (e) => {
        const id = e.lastEventId ? Number(e.lastEventId) : null;
        let data;
        try {
          data = JSON.parse(e.data);
        } catch {
          return;
        }
        this.deliver(id, name, data);
      });
    }
    es.addEventListener("stream.replayed", (e) => {
      es.close();
      this.replaying = null;
      this.attempt = 0;
      let upto = after;
      try {
        upto = Number(JSON.parse(e.data).upto);
      } catch {
        // taken as reaching `after`
      }
      if (this.lastId === null || this.lastId < upto) this.lastId = upto;
      // Another server process may have released less than the shared stream had: read on.
      if (upto < after) setTimeout(() => this.catchUp(after), 200);
      else this.becomeReady();
    });
    es.onerror = () => {
      if (this.replaying !== es) return;
      es.close();
      this.replaying = null;
      const wait = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** this.attempt);
      this.attempt += 1;
      setTimeout(() => this.catchUp(after), wait);
    };
  }

  becomeReady() {
    this.ready = true;
    this.showState();
    const waiting = this.buffer;
    this.buffer = [];
    for (const msg of waiting) this.take(msg);
    if (this.onReady) {
      const ready = this.onReady;
      this.onReady = null;
      ready();
    }
  }

  /** The server says this page's cursor is past every event it ever had (its database was
   * reset or restored from an older copy, docs/STREAM.md): what the page shows belongs to
   * another history, and new events would look already seen. Read everything again, once
   * a minute at most. A retention reset needs nothing: the page shows what the server kept. */
  onReset(raw) {
    let data = {};
    try {
      data = JSON.parse(raw);
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

  deliver(id, name, data) {
    if (id !== null && this.lastId !== null && id <= this.lastId) return;
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
