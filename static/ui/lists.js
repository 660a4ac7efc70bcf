// Todo lists as the owner sees them, rebuilt from list events only: a ListBook folds
// events into plain objects, and renderList draws one list as a card (the flock page) or
// as a report (a finished list, /lists/<id>).

import { ask } from "./dialog.js";
import { h, fmtTokens, fmtClock, fmtTime, plural, reasonField } from "./dom.js";
import { crowAvatar } from "./crow_art.js";
import { renderedAnswer, term } from "./answers.js";
import { get, post } from "./api.js";
import { toast, announce, messageOf } from "./notify.js";

const VERDICT_WORDS = {
  approved: "approved by you",
  rejected: "rejected by you",
  auto: "auto-approved (trusted)",
  timeout: "timed out (counts as rejected)",
};

export class ListBook {
  constructor() {
    this.lists = new Map();
  }

  list(listId, ts) {
    if (!this.lists.has(listId)) {
      this.lists.set(listId, {
        list_id: listId, nest_id: "", requester: "", started: ts, items: new Map(),
        finished: null, tokens: 0, pranks: [], banter: [], seq: this.lists.size,
      });
    }
    return this.lists.get(listId);
  }

  item(list, itemId) {
    if (!list.items.has(itemId)) {
      list.items.set(itemId, {
        item_id: itemId, n: list.items.size + 1, text: "", triage: null, crews: [], answer: null,
        answerCrows: [], verdicts: {}, pending: {}, skipped: null, tokens: 0, banter: [],
        attempt: 1, note: "", overruled: false, reasons: {},
      });
    }
    return list.items.get(itemId);
  }

  /** Fold one event in; returns the list it touched (or null). */
  apply({ name, data }) {
    const listId = data.list_id;
    if (!listId) return null;
    const list = this.list(listId, data.ts);
    const item = data.item_id ? this.item(list, data.item_id) : null;
    switch (name) {
      case "list.started":
        list.nest_id = data.nest_id || "todo";
        list.requester = data.requester || "";
        list.started = data.ts;
        (data.items || []).forEach((it, i) => {
          const entry = this.item(list, it.item_id);
          entry.text = it.text;
          entry.n = i + 1;
        });
        break;
      case "item.triaged":
        item.triage = {
          mode: data.mode, task_type: data.task_type, subtasks: data.subtasks || [],
          reason: data.reason || "",
        };
        if (data.needs_approval) item.pending.triage = { since: data.ts };
        break;
      case "crow.flying":
        item.crews.push({ crow: data.crow, state: "flying", tokens: 0, borrowed: Boolean(data.borrowed) });
        break;
      case "crow.landed": {
        const flight = [...item.crews].reverse().find((c) => c.crow === data.crow && c.state === "flying");
        const tokens = Number(data.tokens) || 0;
        if (flight) Object.assign(flight, { state: data.ok ? "ok" : "failed", tokens, error: data.error || "" });
        else item.crews.push({ crow: data.crow, state: data.ok ? "ok" : "failed", tokens, error: data.error || "" });
        item.tokens += tokens;
        list.tokens += tokens;
        break;
      }
      case "item.answered":
        item.answer = data.answer ?? "";
        item.answerCrows = data.crows || [];
        if (data.needs_approval) item.pending.output = { since: data.ts };
        break;
      case "verdict":
        item.verdicts[data.target] = data.verdict;
        if (data.reason) item.reasons[data.target] = data.reason;
        if (data.edited) item.edited = true;
        delete item.pending[data.target];
        if (item.errors) delete item.errors[data.target];
        break;
      case "item.skipped":
        item.skipped = data.reason || "skipped";
        item.pending = {};
        break;
      case "verdict.overruled":
        item.overruled = true;
        if (data.reason) item.reasons.overrule = data.reason;
        break;
      case "item.retried":
        // The item's next attempt: it starts again from triage, with the owner's note.
        Object.assign(item, {
          triage: null, crews: [], answer: null, answerCrows: [], verdicts: {}, pending: {}, skipped: null,
          tokens: 0, attempt: data.attempt, note: data.note || "", overruled: false, reasons: {}, edited: false,
        });
        list.finished = null;
        break;
      case "requester.pranked":
        list.pranks.push({ message: data.message, cooldown_s: data.cooldown_s, ts: data.ts });
        break;
      case "crow.banter":
        (item || list).banter.push({ crow: data.crow, to: data.to, text: data.text });
        break;
      case "list.finished":
        list.finished = { tokens_used: data.tokens_used, token_budget: data.token_budget, ts: data.ts };
        for (const it of list.items.values()) it.pending = {};
        break;
      default:
        return null;
    }
    return list;
  }

  pendingApprovals() {
    const out = [];
    for (const list of this.lists.values()) {
      for (const item of list.items.values()) {
        for (const target of Object.keys(item.pending)) out.push({ list, item, target });
      }
    }
    return out;
  }
}

export function itemStage(item) {
  if (item.skipped) return "skipped";
  if (item.overruled) return "overruled";
  const out = item.verdicts.output;
  if (out === "approved" || out === "auto") return "done";
  if (item.pending.output) return "awaiting-output";
  if (item.answer !== null) return "answered";
  if (item.crews.some((c) => c.state === "flying" && c.crow !== "Sentry")) return "flying";
  if (item.pending.triage) return "awaiting-triage";
  if (item.triage) return item.verdicts.triage === "rejected" ? "skipped" : "triaged";
  return "triage";
}

const STAGE_WORDS = {
  triage: "the Sentry is triaging",
  "awaiting-triage": "waiting for your triage call",
  triaged: "triaged, crows taking off",
  flying: "crows in flight",
  answered: "answered",
  "awaiting-output": "waiting for your approval",
  done: "done",
  skipped: "skipped",
  overruled: "overruled by you",
};

function stepState(item, step) {
  const stage = itemStage(item);
  const order = ["triage", "flight", "answer"];
  const at = {
    triage: "triage", "awaiting-triage": "triage", triaged: "flight", flying: "flight",
    answered: "answer", "awaiting-output": "answer", done: "done", skipped: "skipped", overruled: "skipped",
  }[stage];
  if (at === "done") return "done";
  if (at === "skipped") {
    const reached = item.answer !== null ? 2 : item.crews.some((c) => c.crow !== "Sentry") ? 1 : 0;
    const i = order.indexOf(step);
    return i < reached ? "done" : i === reached ? "failed" : "off";
  }
  const i = order.indexOf(step);
  const j = order.indexOf(at);
  if (i < j) return "done";
  if (i === j) return stage.startsWith("awaiting") ? "waiting" : "active";
  return "off";
}

function track(item) {
  const steps = [["triage", "Triage"], ["flight", "Flight"], ["answer", "Answer"]];
  return h("ol", { class: "track", "aria-label": `Progress: ${STAGE_WORDS[itemStage(item)]}` },
    steps.map(([key, label]) => h("li", { class: `step step-${stepState(item, key)}` }, label)));
}

export function budgetBar(used, budget, label) {
  const pct = budget > 0 ? Math.min(100, (used / budget) * 100) : 0;
  const tone = pct >= 90 ? "hot" : pct >= 65 ? "warm" : "cool";
  return h("div", { class: `budget budget-${tone}` },
    h("span", { class: "budget-label" }, label),
    h("span", { class: "budget-value" }, `${fmtTokens(used)} / ${fmtTokens(budget)} tokens`),
    h("span", { class: "bar", role: "meter", "aria-label": label, "aria-valuemin": 0,
      "aria-valuemax": budget, "aria-valuenow": Math.min(used, budget) },
      h("span", { style: { width: `${pct}%` } })));
}

function crewChips(item) {
  if (!item.crews.length) return null;
  return h("ul", { class: "crew", "aria-label": "Crows on this item" },
    item.crews.map((c) => h("li", {
      class: `crew-chip crew-${c.state}`,
      title: c.state === "failed" ? `${c.crow} failed: ${c.error || "no reason given"}`
        : `${c.crow}: ${c.state === "flying" ? "in flight" : `${fmtTokens(c.tokens)} tokens`}${c.borrowed ? " (borrowed from outside the nest)" : ""}`,
    },
    crowAvatar(c.crow, 20),
    h("a", { href: `/crows/${encodeURIComponent(c.crow)}` }, c.crow),
    c.borrowed ? h("span", { class: "tiny-badge" }, "borrowed") : null,
    h("span", { class: "crew-state" }, c.state === "flying" ? "✈︎ flying" : c.state === "ok" ? "✓" : "✕ fell"))));
}

function deadlineOf(item, target, ctx) {
  const key = `${item.item_id}:${target}`;
  if (ctx.deadlines && ctx.deadlines.has(key)) return ctx.deadlines.get(key);
  const since = Date.parse(item.pending[target].since);
  return since + (ctx.config.approval_timeout_s || 600) * 1000;
}

function approvalBox(item, target, ctx) {
  const deadline = deadlineOf(item, target, ctx);
  const sending = ctx.sending && ctx.sending.has(`${item.item_id}:${target}`);
  const error = item.errors && item.errors[target];
  const question = target === "triage"
    ? `The Sentry wants to fly this ${item.triage ? `${item.triage.mode} as ${item.triage.task_type}` : ""}. Let it?`
    : "Is this answer good enough to keep?";
  const button = (approve) => h("button", {
    type: "button",
    class: `btn ${approve ? "approve" : "reject"}`,
    disabled: sending,
    dataset: { focusKey: `${approve ? "approve" : "reject"}:${item.item_id}:${target}` },
    "aria-label": `${approve ? "Approve" : "Reject"} the ${target} of item ${item.n}`,
    onclick: () => ctx.onVerdict(item, target, approve, approve ? "" : (ctx.reasons?.get(key) || "").trim()),
  }, approve ? "Approve" : "Reject");
  // Reject stays one click; a reason typed beside it goes with the rejection. The page
  // redraws a list on every event of its flight, so what is typed lives in ctx.reasons.
  const key = `${item.item_id}:${target}`;
  const reason = ctx.reasons ? reasonField(`the ${target} of item ${item.n}`, {
    value: ctx.reasons.get(key) || "", disabled: sending, dataset: { focusKey: `reason:${key}` },
    oninput: (e) => ctx.reasons.set(key, e.target.value),
  }) : null;
  return h("div", { class: `approval approval-${target}`, role: "group", "aria-label": `Approve ${target} of item ${item.n}` },
    h("div", { class: "approval-q" },
      h("strong", {}, target === "triage" ? "Triage call" : "Output"), " · ", question),
    h("div", { class: "approval-actions" },
      button(true), button(false), reason,
      h("span", { class: "countdown", dataset: { deadline: String(deadline) },
        title: "Unanswered approvals fail safe: after the timeout they count as rejected" },
        `fails safe in ${fmtClock((deadline - Date.now()) / 1000)}`)),
    error ? h("p", { class: "form-error", role: "alert" }, error) : null);
}

function triageLine(item) {
  if (!item.triage) return null;
  const t = item.triage;
  return h("div", { class: "triage" },
    h("span", { class: `chip mode-${t.mode}` }, term(t.mode)),
    h("span", { class: "chip" }, t.task_type),
    item.verdicts.triage ? h("span", { class: `verdict verdict-${item.verdicts.triage}` }, `triage ${VERDICT_WORDS[item.verdicts.triage] || item.verdicts.triage}`) : null,
    t.reason ? h("span", { class: "reason" }, t.reason) : null,
    t.subtasks && t.subtasks.length
      ? h("ol", { class: "subtasks" }, t.subtasks.map((s) => h("li", {}, typeof s === "string" ? s : s.text || JSON.stringify(s))))
      : null);
}

function answerBlock(item, ctx, { full = false } = {}) {
  if (item.answer === null) return null;
  // The server's rendered answer when it has been read (GET /api/lists/{id}) for this
  // very text; the plain text until then.
  const state = ctx.itemState ? ctx.itemState.get(item.item_id) : null;
  const fresh = state && state.answer === item.answer && state.attempt === item.attempt;
  const label = `the answer to item ${item.n}`;
  const edited = fresh && state.edited_text;
  return h("div", { class: "answer-wrap" },
    edited
      ? h("div", { class: "edited-answer" },
        h("p", { class: "edited-label" }, h("strong", {}, "Your edited answer"), " (approved; the crow's original is below)"),
        renderedAnswer({ html: state.edited_html, raw: state.edited_text, label: `your edited answer to item ${item.n}` }))
      : null,
    h("div", { class: `answer${full ? " answer-full" : ""}${edited ? " answer-original" : ""}`, tabindex: full ? null : "0", "aria-label": `Answer to item ${item.n}` },
      edited ? h("p", { class: "muted" }, "The crow's original:") : null,
      renderedAnswer({ html: fresh ? state.answer_html : "", raw: item.answer, mock: fresh ? state.mock : Boolean(ctx.mockBrain), label })),
    h("p", { class: "answer-by muted" },
      item.answerCrows.length ? `by ${item.answerCrows.join(", ")}` : "",
      item.verdicts.output ? h("span", { class: `verdict verdict-${item.verdicts.output}` }, ` · output ${VERDICT_WORDS[item.verdicts.output] || item.verdicts.output}`) : null));
}

function banterLines(entries) {
  if (!entries.length) return null;
  return h("ul", { class: "banter" }, entries.map((b) =>
    h("li", {}, h("strong", {}, b.crow), b.to ? ` to ${b.to}` : "", ": ", h("q", {}, b.text))));
}

function reasonsLine(item) {
  const parts = Object.entries(item.reasons || {}).map(([target, reason]) =>
    h("li", {}, h("strong", {}, target === "overrule" ? "Overruled: " : `${target} rejected: `), reason));
  return parts.length ? h("ul", { class: "owner-reasons", "aria-label": "Your reasons" }, parts) : null;
}

function ownerActions(item, ctx) {
  if (!ctx.onOverrule && !ctx.onRetry) return null;
  const stage = itemStage(item);
  const out = [];
  if (ctx.onOverrule && stage === "done" && item.verdicts.output === "auto" && !item.overruled) {
    out.push(h("button", { type: "button", class: "btn ghost reject overrule-btn",
      "aria-label": `Overrule the auto-approved answer to item ${item.n}`,
      onclick: () => ctx.onOverrule(item) }, "Overrule…"));
  }
  if (ctx.onRetry && (stage === "skipped" || stage === "overruled")) {
    const id = `retry-note-${item.item_id}`;
    const note = h("textarea", { id, rows: 2, class: "retry-note" });
    const error = h("p", { class: "form-error", role: "alert", hidden: true });
    const form = h("form", { class: "retry-form" },
      h("label", { for: id }, `Fly item ${item.n} again, with a note for the crews`),
      note,
      h("button", { type: "submit", class: "btn primary retry-btn" }, "Retry with this note"),
      error);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      ctx.onRetry(item, note.value, error);
    });
    out.push(form);
  }
  return out.length ? h("div", { class: "owner-actions" }, out) : null;
}

function flightLog(item, ctx) {
  const flights = ctx.flights ? ctx.flights.get(item.item_id) : null;
  if (!ctx.loadFlights) return null;
  const details = h("details", { class: "flight-log" },
    h("summary", {}, "Flight log: what each crow was asked"),
    flights ? (flights.length
      ? h("ol", {}, flights.map((f) => h("li", {},
        h("p", {}, h("strong", {}, f.crow), ` · ${f.task} · ${f.provider}:${f.model} · ${fmtTokens(f.tokens_in + f.tokens_out)} tokens${f.ok ? "" : ` · failed: ${f.error}`}`),
        h("pre", { class: "prompt", tabindex: "0", "aria-label": `Prompt given to ${f.crow}` }, f.prompt || "(no prompt recorded)"))))
      : h("p", { class: "muted" }, "No flights yet.")) : h("p", { class: "muted" }, "Loading…"));
  details.addEventListener("toggle", () => { if (details.open) ctx.loadFlights(item); });
  if (ctx.openFlights && ctx.openFlights.has(item.item_id)) details.open = true;
  details.addEventListener("toggle", () => {
    if (!ctx.openFlights) return;
    if (details.open) ctx.openFlights.add(item.item_id);
    else ctx.openFlights.delete(item.item_id);
  });
  return details;
}

/** "Skipped: failure", and for a failure what each failed flight's brain said (the crew
 * chips only carry it on hover, and a real model's error names the fix). */
function skippedLine(item) {
  const failed = item.skipped === "failure" ? item.crews.filter((c) => c.state === "failed" && c.error) : [];
  return h("div", { class: "skipped" },
    h("p", {}, `Skipped: ${item.skipped}`),
    failed.length ? h("ul", { class: "flight-errors" }, failed.map((c) => h("li", {}, `${c.crow}: ${c.error}`))) : null);
}

function itemRow(item, ctx, { report = false } = {}) {
  const stage = itemStage(item);
  return h("li", { class: `item item-${stage}`, id: `item-${item.item_id}`, dataset: { itemId: item.item_id, stage } },
    h("div", { class: "item-head" },
      h("span", { class: "item-n" }, item.n),
      h("p", { class: "item-text" }, item.text || item.item_id),
      h("span", { class: `stage-word stage-${stage}` }, STAGE_WORDS[stage])),
    report && itemStage(item) === "done" ? null : track(item),
    triageLine(item),
    crewChips(item),
    item.note ? h("p", { class: "owner-note" }, h("strong", {}, `Attempt ${item.attempt}, your note: `), item.note) : null,
    item.pending.triage && !report && !ctx.noApprovalBoxes ? approvalBox(item, "triage", ctx) : null,
    answerBlock(item, ctx, { full: report }),
    item.pending.output && !report && !ctx.noApprovalBoxes ? approvalBox(item, "output", ctx) : null,
    item.skipped ? skippedLine(item) : null,
    item.overruled ? h("p", { class: "skipped overruled" }, "Overruled by you: the crows were demoted as for a rejection.") : null,
    reasonsLine(item),
    ownerActions(item, ctx),
    flightLog(item, ctx),
    banterLines(item.banter),
    item.tokens ? budgetBar(item.tokens, ctx.config.item_token_budget || 6000, "item") : null);
}

export function listTitle(list) {
  return `List ${list.list_id}`;
}

export function renderList(list, ctx, { report = false } = {}) {
  const items = [...list.items.values()].sort((a, b) => a.n - b.n);
  const used = list.finished ? list.finished.tokens_used : list.tokens;
  const budget = list.finished ? list.finished.token_budget : ctx.config.list_token_budget || 20000;
  const done = items.filter((i) => ["done", "skipped"].includes(itemStage(i))).length;
  const waiting = items.reduce((n, i) => n + Object.keys(i.pending).length, 0);
  const head = h("header", { class: "list-head" },
    h("div", {},
      h(report ? "h2" : "h3", { class: "list-title" },
        report ? listTitle(list) : h("a", { href: `/lists/${encodeURIComponent(list.list_id)}` }, listTitle(list))),
      h("p", { class: "list-meta muted" },
        list.nest_id ? h("a", { class: "chip", href: `/nests/${encodeURIComponent(list.nest_id)}` }, `#${list.nest_id}`) : null,
        list.requester ? ` from ${list.requester}` : "",
        list.started ? ` · ${fmtTime(list.started)}` : "",
        ` · ${done}/${plural(items.length, "item")} settled`)),
    h("span", { class: `list-status ${list.finished ? "is-finished" : waiting ? "is-waiting" : "is-flying"}` },
      list.finished ? "finished" : waiting ? `${waiting} waiting for you` : "in flight"));
  return h("article", {
    class: `list-card${list.finished ? " finished" : ""}`, id: `list-${list.list_id}`,
    dataset: { listId: list.list_id }, "aria-label": listTitle(list),
  },
  head,
  budgetBar(used, budget, list.finished ? "tokens used" : "tokens so far"),
  list.pranks.length ? h("p", { class: "prank-note" }, `Pranked: ${list.pranks.at(-1).message}`) : null,
  h("ol", { class: "items" }, items.map((item) => itemRow(item, ctx, { report }))),
  banterLines(list.banter),
  list.finished && !report
    ? h("p", { class: "report-link" }, h("a", { class: "btn ghost", href: `/lists/${encodeURIComponent(list.list_id)}` }, "Read the report →"))
    : null);
}

/** Tick every countdown on the page once a second. */
export function startCountdowns() {
  setInterval(() => {
    const now = Date.now();
    for (const el of document.querySelectorAll(".countdown[data-deadline]")) {
      const left = (Number(el.dataset.deadline) - now) / 1000;
      el.textContent = left > 0 ? `fails safe in ${fmtClock(left)}` : "timing out…";
      el.classList.toggle("urgent", left < 60);
    }
  }, 1000);
}

/** The server's view of each list's items (GET /api/lists/{id}): the rendered answers,
 * the mock badge, the owner's edits and reasons. Read again shortly after an event that
 * changes them; `redraw(listId)` is called after each read. */
export class ListStates {
  constructor(ctx, redraw) {
    this.ctx = ctx;
    this.redraw = redraw;
    this.timers = new Map();
    ctx.itemState = ctx.itemState || new Map();
  }

  static touches(name) {
    return ["item.answered", "verdict", "verdict.overruled", "item.retried", "item.skipped", "list.finished"].includes(name);
  }

  soon(listId, ms = 250) {
    clearTimeout(this.timers.get(listId));
    this.timers.set(listId, setTimeout(() => this.read(listId), ms));
  }

  async read(listId) {
    let state;
    try {
      state = await get(`/api/lists/${encodeURIComponent(listId)}`);
    } catch {
      return; // the answers stay as plain text; the stream still shows everything
    }
    for (const item of state.items || []) this.ctx.itemState.set(item.item_id, item);
    this.redraw(listId, state);
  }
}


/** Overrule an auto-approved answer (asks for a reason) and retry a skipped or overruled
 * item with a note: the same on the flock page and the report. */
export const ownerHandlers = {
  onOverrule: async (item) => {
    const crows = [...new Set(item.answerCrows || [])];
    const who = crows.length ? crows.join(" and ") : "the crows who gave it";
    const reason = await ask({
      title: `Overrule the answer to item ${item.n}?`,
      message: `It was approved without you because ${who} ${crows.length === 1 ? "is" : "are"} trusted. Overruling it demotes ${crows.length === 1 ? crows[0] : "them"} as a rejection would.`,
      confirm: `Overrule ${crows.length ? who : "the answer"}`, input: "Why? (optional)", danger: true,
    });
    if (reason === null) return;
    try {
      await post("/api/verdicts", { item_id: item.item_id, target: "output", overrule: true, ...(reason.trim() ? { reason: reason.trim() } : {}) });
      announce(`Overruled the answer to item ${item.n}.`);
    } catch (err) {
      toast(messageOf(err), "error");
    }
  },
  onRetry: async (item, note, errorEl) => {
    errorEl.hidden = true;
    try {
      const made = await post(`/api/items/${encodeURIComponent(item.item_id)}/retry`, { note });
      announce(`Item ${item.n} flies again (attempt ${made.attempt}).`);
    } catch (err) {
      errorEl.textContent = messageOf(err);
      errorEl.hidden = false;
    }
  },
};
