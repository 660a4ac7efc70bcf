// The browser's one live connection to GET /api/events, shared by every tab.
//
// Browsers allow six connections per host: a stream per tab would hang the seventh tab
// (and every POST it makes). So one firehose serves them all. It lives in a SharedWorker
// (stream_worker.js) when the browser has one, so it outlives any one tab: the worker stays
// while a tab is open, and its stream with it. A browser without SharedWorker runs the
// same hub inside the page (one connection per tab, as before).
//
// The hub opens the firehose after the log's final horizon (`GET /api/state`'s
// `last_event_id`), so it knows from where it delivers every event: a tab that joins is
// told that id (`after`), reads its own backlog up to at least it (`?replay=1`), and takes
// everything after it from the hub. Reconnecting is the hub's: it reopens from the last id
// it saw, backing off 1 s, 2 s, 4 s ... up to 10 s, so every tab's stream stays gap-free.
//
// Messages to a tab: {type: "welcome", after}, {type: "event", id, name, data},
// {type: "state", state, text}, {type: "reconnected"}, {type: "reset", data}.
// Messages from a tab: {type: "hello", names}, {type: "names", names}, {type: "bye"}.

const MAX_BACKOFF_MS = 10000;

export class StreamHub {
  constructor({ fetchState = defaultFetchState, EventSourceImpl = globalThis.EventSource } = {}) {
    this.fetchState = fetchState;
    this.EventSourceImpl = EventSourceImpl;
    this.tabs = new Set(); // each: { send(msg) }
    this.names = new Set();
    this.lastId = null; // the last event id delivered (or the opening cursor)
    this.es = null;
    this.attempt = 0;
    this.timer = null;
    this.wasDown = false;
    this.starting = false;
    this.state = { type: "state", state: "connecting", text: "" };
  }

  join(tab, names = []) {
    this.tabs.add(tab);
    this.addNames(names);
    tab.send(this.state);
    if (this.lastId !== null) tab.send({ type: "welcome", after: this.lastId });
    else this.begin();
  }

  leave(tab) {
    this.tabs.delete(tab);
  }

  addNames(names) {
    for (const name of names) {
      if (this.names.has(name)) continue;
      this.names.add(name);
      if (this.es) this.es.addEventListener(name, this.deliverer(name));
    }
  }

  broadcast(msg) {
    for (const tab of this.tabs) {
      try {
        tab.send(msg);
      } catch {
        this.tabs.delete(tab); // a tab that closed without saying goodbye
      }
    }
  }

  /** Read the horizon, then open the firehose after it (once; retried until it works). */
  async begin() {
    if (this.starting || this.es) return;
    this.starting = true;
    try {
      const state = await this.fetchState();
      this.lastId = Number(state.last_event_id) || 0;
      for (const name of state.capabilities || []) this.addNames([name]);
      this.starting = false;
      this.broadcast({ type: "welcome", after: this.lastId });
      this.open();
    } catch {
      this.starting = false;
      this.wasDown = true;
      this.setState("reconnecting", "reconnecting…");
      const wait = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** this.attempt);
      this.attempt += 1;
      setTimeout(() => this.begin(), wait);
    }
  }

  setState(state, text = "") {
    this.state = { type: "state", state, text };
    this.broadcast(this.state);
  }

  open() {
    clearTimeout(this.timer);
    this.timer = null;
    this.setState(this.wasDown ? "reconnecting" : "connecting");
    const es = new this.EventSourceImpl(`/api/events?since=${this.lastId}`);
    this.es = es;
    es.onopen = () => {
      if (this.es !== es) return;
      this.attempt = 0;
      if (this.wasDown) {
        this.wasDown = false;
        this.setState("live", "live again");
        this.broadcast({ type: "reconnected" });
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
    for (const name of this.names) es.addEventListener(name, this.deliverer(name));
    es.addEventListener("stream.reset", (e) => this.broadcast({ type: "reset", data: e.data }));
  }

  /** The network came back (a tab heard `online`): try at once. */
  online() {
    if (this.wasDown && this.es) this.reconnectSoon(0);
  }

  offline() {
    if (!this.es || this.es.readyState === 2) return; // already down: the retry is set
    this.es.close();
    this.wasDown = true;
    this.reconnectSoon();
  }

  reconnectSoon(delay) {
    if (this.timer) clearTimeout(this.timer);
    const wait = delay ?? Math.min(MAX_BACKOFF_MS, 1000 * 2 ** this.attempt);
    this.attempt += 1;
    this.setState("reconnecting", `reconnecting${this.attempt > 1 ? ` (try ${this.attempt})` : ""}…`);
    this.timer = setTimeout(() => this.open(), wait);
  }

  deliverer(name) {
    return (e) => {
      const id = e.lastEventId ? Number(e.lastEventId) : null;
      if (id !== null && this.lastId !== null && id <= this.lastId) return;
      if (id !== null) this.lastId = id;
      this.broadcast({ type: "event", id, name, data: e.data });
    };
  }
}

async function defaultFetchState() {
  const r = await fetch("/api/state", { credentials: "same-origin", headers: { Accept: "application/json" } });
  if (!r.ok) throw new Error(`GET /api/state answered ${r.status}`);
  return r.json();
}
