// Work that doesn't stall, drawn (docs/GOVERNANCE.md): a room's expectations with their due
// times and nudge counts, its debates as rounds with stances and the verdict, and, on a
// crow's page, what it remembers across rooms and the orchestration decisions about it.
// Every panel reads its endpoint and reads it again when one of its events arrives.

import { h, fmtTime } from "./dom.js";
import { get } from "./api.js";
import { crowAvatar } from "./crow_art.js";
import { messageOf } from "./notify.js";

export const SUMMARY_PREFIX = "Owner summary";

/** The harness's summary of open expectations for the owner: it must stand out. */
export function isOwnerSummary(msg) {
  return msg.author === "harness" && msg.to === "owner" && String(msg.text || "").startsWith(SUMMARY_PREFIX);
}

function dueWords(dueAt) {
  const ms = Date.parse(dueAt) - Date.now();
  if (Number.isNaN(ms)) return "";
  const mins = Math.round(Math.abs(ms) / 60000);
  const span = mins < 1 ? "under a minute" : mins < 90 ? `${mins} min` : `${Math.round(mins / 60)} h`;
  return ms >= 0 ? `due in ${span}` : `overdue ${span}`;
}

const CHECK_WORDS = {
  promise_kept: "promise kept",
  requester_answer: "requester gets an answer",
  single_owner: "single owner delivers",
  rounds_completed: "rounds completed",
  turn_order: "turn order",
  claims_sourced: "claims sourced",
  correction_handled: "correction handled once",
  role_adherence: "role adherence",
  distinct_lens: "a distinct lens",
};

function refLink(msgId) {
  return h("a", { class: "ref", href: `#msg-${msgId}`, "data-ref": msgId }, msgId);
}

class Debounced {
  constructor(fn, ms = 300) { this.fn = fn; this.ms = ms; this.timer = null; }
  soon() { clearTimeout(this.timer); this.timer = setTimeout(this.fn, this.ms); }
}

export class ExpectationsPanel {
  constructor(el, nestId) {
    this.el = el;
    this.nestId = nestId;
    this.items = [];
    this.reload = new Debounced(() => this.load());
    // Due times count down while the page is open; an expectation closed without a
    // message (its request carried out another way) shows up on the next read.
    setInterval(() => this.draw(), 30000);
    setInterval(() => this.load(), 60000);
  }

  async load() {
    try {
      const body = await get(`/api/nests/${encodeURIComponent(this.nestId)}/expectations`);
      this.items = body.expectations || [];
      this.error = "";
    } catch (err) {
      this.error = `Could not read the expectations: ${messageOf(err)}`;
    }
    this.draw();
  }

  apply(event) {
    if (event.name.startsWith("expectation.")) this.reload.soon();
  }

  draw() {
    // Still owed: open, or missed (overdue, and being nudged for).
    const owed = (e) => e.status === "open" || e.status === "missed";
    const open = this.items.filter(owed);
    const closed = this.items.filter((e) => !owed(e)).slice(-5).reverse();
    const row = (e) => h("li", {
      class: `expectation status-${e.status}${e.nudges ? " nudged" : ""}`,
      dataset: { expectation: e.expectation_id },
    },
    h("div", { class: "exp-head" },
      crowAvatar(e.crow, 18), h("strong", {}, e.crow),
      h("span", { class: "chip exp-check" }, CHECK_WORDS[e.check] || e.check),
      h("span", { class: `chip exp-nudges${e.nudges >= e.nudge_limit ? " full" : ""}`, title: "nudges sent / the loop guard" },
        `nudges ${e.nudges}/${e.nudge_limit}`)),
    h("p", { class: "exp-what" }, e.expected),
    h("p", { class: "exp-meta muted" },
      refLink(e.msg_id), " · ",
      owed(e)
        ? h("time", { datetime: e.due_at, class: Date.parse(e.due_at) < Date.now() ? "overdue" : "" }, `${dueWords(e.due_at)} (${fmtTime(e.due_at)})`)
        : h("span", { class: `outcome outcome-${e.status}` }, e.status),
      e.due_from === "text" ? h("span", { title: "the promise named its own time" }, " · its own time") : null));
    this.el.replaceChildren(...[
      h("h2", { class: "rooms-title" }, `Expectations · ${open.length} open`),
      this.error ? h("p", { class: "form-error" }, this.error) : null,
      open.length ? h("ul", { class: "expectation-list", "aria-label": "Open expectations" }, open.map(row))
        : h("p", { class: "muted" }, "Nothing is owed right now."),
      closed.length ? h("details", { class: "exp-closed" }, h("summary", {}, "Recently closed"),
        h("ul", { class: "expectation-list" }, closed.map(row))) : null,
    ].filter(Boolean));
  }
}

export class DebatesPanel {
  constructor(el, nestId) {
    this.el = el;
    this.nestId = nestId;
    this.debates = [];
    this.reload = new Debounced(() => this.load());
  }

  async load() {
    try {
      const body = await get(`/api/nests/${encodeURIComponent(this.nestId)}/debates`);
      this.debates = body.debates || [];
    } catch (err) {
      this.debates = [];
      this.error = `Could not read the debates: ${messageOf(err)}`;
    }
    this.draw();
  }

  apply(event) {
    if (event.name.startsWith("debate.")) this.reload.soon();
  }

  draw() {
    if (!this.debates.length) {
      this.el.replaceChildren(h("h2", { class: "rooms-title" }, "Debates"),
        h("p", { class: "muted" }, "Say “debate this: …” to have two crows argue it out."));
      return;
    }
    this.el.replaceChildren(h("h2", { class: "rooms-title" }, "Debates"),
      ...this.debates.slice(-3).reverse().map((d) => this.debateEl(d)));
  }

  debateEl(d) {
    const rounds = [];
    for (let r = 1; r <= d.rounds; r += 1) {
      const turns = d.turns.filter((t) => t.round === r);
      rounds.push(h("li", { class: "debate-round" }, h("h3", {}, `Round ${r}`),
        turns.length ? h("ol", {}, turns.map((t) => h("li", { class: "turn" },
          h("span", { class: "turn-who" }, crowAvatar(t.crow, 16), t.crow, h("span", { class: "chip stance" }, t.stance)),
          h("p", {}, t.text), refLink(t.msg_id))))
          : h("p", { class: "muted" }, d.round === r && d.status === "running" ? `@${d.cued || "…"} is up` : "not yet")));
    }
    return h("article", { class: `debate status-${d.status}`, dataset: { debate: d.debate_id } },
      h("p", { class: "debate-q" }, h("strong", {}, d.question)),
      h("p", { class: "stances" }, Object.entries(d.stances).map(([crow, stance]) =>
        h("span", { class: "chip stance" }, crowAvatar(crow, 14), `${crow}: ${stance}`)),
      h("span", { class: "chip" }, `judge ${d.judge}`)),
      h("ol", { class: "debate-rounds" }, rounds),
      Object.keys(d.finals).length ? h("div", { class: "finals" }, h("h3", {}, "Final positions"),
        h("ul", {}, Object.entries(d.finals).map(([crow, text]) => h("li", {}, h("strong", {}, `${crow}: `), text)))) : null,
      d.verdict ? h("div", { class: "verdict" }, h("h3", {}, `Verdict · ${d.judge}`),
        h("p", {}, d.verdict), d.winner ? h("p", { class: "winner" }, `The call goes to ${d.winner}.`) : null)
        : h("p", { class: "muted" }, `${d.status} · ${d.phase}${d.cued ? ` · waiting on ${d.cued}` : ""}`));
  }
}

export async function drawMemory(el, name) {
  let body;
  try {
    body = await get(`/api/crows/${encodeURIComponent(name)}/memory`);
  } catch (err) {
    el.replaceChildren(h("p", { class: "muted" }, `Could not read ${name}'s memory: ${messageOf(err)}`));
    return;
  }
  const items = body.items || [];
  el.replaceChildren(
    h("p", { class: "muted" }, `What ${name} carries from room to room (within ${body.token_budget} tokens of its prompt; most recent first here).`),
    items.length ? h("ul", { class: "memory-list" }, items.slice(0, 20).map((m) => h("li", { class: `memory${m.private ? " private" : ""}` },
      h("span", { class: "chip" }, m.room), h("span", { class: "chip" }, m.role === "told" ? `told by ${m.author}` : m.role),
      m.private ? h("span", { class: "chip warn", title: "Your direct chat: it never reaches another room unless this crow repeats it there" }, "private") : null,
      h("p", {}, m.text), h("a", { class: "ref", href: `/nests/${encodeURIComponent(m.room)}#msg-${m.msg_id}` }, m.msg_id))))
      : h("p", { class: "muted" }, "Nothing yet: it remembers what it says and is told in its rooms."));
}

export async function drawOrchestration(el, name) {
  let rows = [];
  try {
    const [picked, decided] = await Promise.all([
      get(`/api/orchestration?crow=${encodeURIComponent(name)}`),
      get(`/api/orchestration?decider=${encodeURIComponent(name)}`),
    ]);
    const seen = new Set();
    rows = [...picked.decisions, ...decided.decisions].filter((d) => !seen.has(d.decision_id) && seen.add(d.decision_id));
    rows.sort((a, b) => (a.created_at < b.created_at ? 1 : -1));
  } catch (err) {
    el.replaceChildren(h("p", { class: "muted" }, `Could not read the orchestration log: ${messageOf(err)}`));
    return;
  }
  if (!rows.length) {
    el.replaceChildren(h("p", { class: "muted" }, `No crow or model pick has involved ${name} yet.`));
    return;
  }
  el.replaceChildren(h("table", { class: "orchestration" },
    h("thead", {}, h("tr", {}, ["When", "Decider", "Pick", "Task", "Score", ""].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows.slice(0, 30).map((d) => h("tr", { class: `band-${d.band}`, dataset: { decision: d.decision_id } },
      h("td", {}, fmtTime(d.created_at)),
      h("td", {}, d.decider),
      h("td", {}, d.kind === "model" ? `${d.crow} on ${d.model}` : d.crow),
      h("td", { class: "task" }, d.task),
      h("td", { class: "num", title: JSON.stringify(d.factors) }, d.score.toFixed(2), d.band === "low" ? h("span", { class: "chip warn" }, "low") : null),
      h("td", {}, d.nudge_msg_id ? h("a", { class: "ref", href: `/nests/${encodeURIComponent(d.nest_id)}#msg-${d.nudge_msg_id}` }, "nudged") : ""))))));
}
