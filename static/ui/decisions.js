// Owner decisions (docs/GOVERNANCE.md): a card per open decision with its question, the
// evidence, the exact approval phrase as a one-click button, Retire, Keep quarantined and
// a countdown to the fail-safe timeout; and the Approve/Reject bar of a chat delivery that
// waits for the owner. Both pages (the flock, a nest) draw them from the same events:
// decision.opened / decision.closed and verdict.

import { ask } from "./dialog.js";
import { h, $, plural, reasonField } from "./dom.js";
import { post } from "./api.js";
import { crowAvatar } from "./crow_art.js";
import { toast, announce, messageOf } from "./notify.js";
import { OWNER } from "./vocab.js";

const BREACH_WORDS = {
  redo: "redo", ignored_decline: "ignored decline", forbidden_kind: "forbidden kind",
  fabricated_source: "fabricated source", budget_blowout: "budget blowout",
  off_task_claim: "off-task claim", repeated_misses: "repeated nudged misses", owner_report: "reported by hand",
};
const OUTCOME_WORDS = {
  reinstated: "reinstated", retired: "retired", kept: "kept quarantined", timeout: "timed out: kept quarantined",
};
const VERDICT_WORDS = { approved: "approved", rejected: "rejected", auto: "auto (trusted)", timeout: "timed out" };

/** "23:59:58", "4:05": what is left before a deadline. */
export function fmtLeft(seconds) {
  const s = Math.max(0, Math.round(seconds));
  const hours = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = String(s % 60).padStart(2, "0");
  return hours ? `${hours}:${String(m).padStart(2, "0")}:${rest}` : `${m}:${rest}`;
}

function tick() {
  const now = Date.now();
  for (const el of document.querySelectorAll(".decision-countdown[data-deadline]")) {
    const left = (Number(el.dataset.deadline) - now) / 1000;
    el.textContent = left > 0 ? `fails safe in ${fmtLeft(left)}` : "timing out…";
    el.classList.toggle("urgent", left < 60);
  }
}

/** The decision cards of one box (#decisions), kept in step with the stream. */

// Approve / Reject for a chat delivery waiting for the owner, in the room and on the flock
// page alike: both buttons wait while the verdict is in flight. Reject stays one click; the
// optional reason beside it goes with the rejection (kept with the verdict, said in the room).
function deliveryVerdictButtons(msgId, crow = "") {
  const whose = crow ? `${crow}'s delivery` : "delivery";
  const reason = reasonField(`${whose} ${msgId}`);
  // Each button names its crow: a screen reader hears "Approve Soot's delivery todo-5".
  const buttons = [true, false].map((approve) => h("button", {
    type: "button", class: `btn ${approve ? "approve" : "reject"}`,
    "aria-label": `${approve ? "Approve" : "Reject"} ${whose} ${msgId}`, onclick: () => send(approve),
  }, approve ? "Approve" : "Reject"));
  async function send(approve) {
    for (const b of buttons) b.disabled = true;
    const body = { item_id: msgId, target: "output", approve };
    if (!approve && reason.value.trim()) body.reason = reason.value.trim();
    try {
      await post("/api/verdicts", body);
      announce(`${approve ? "Approved" : "Rejected"} ${msgId}.`);
    } catch (err) {
      for (const b of buttons) b.disabled = false;
      toast(messageOf(err), "error");
    }
  }
  return [reason, ...buttons];
}

// A trusted crow's delivery went through without the owner (`auto`); the owner can still
// overrule it afterwards, which demotes the crow as a rejection would (docs/REVIEW.md).
function overruleButton(msgId, author) {
  const button = h("button", {
    type: "button", class: "btn ghost reject overrule-btn",
    "aria-label": `Overrule ${author}'s auto-approved delivery ${msgId}`, onclick: overrule,
  }, "Overrule…");
  async function overrule() {
    const reason = await ask({
      title: `Overrule ${author}'s delivery ${msgId}?`,
      message: `It was approved without you because ${author} is trusted. Overruling it demotes ${author} as a rejection would.`,
      confirm: `Overrule ${author}`, input: "Why? (optional)", danger: true,
    });
    if (reason === null) return;
    button.disabled = true;
    try {
      await post("/api/verdicts", { item_id: msgId, target: "output", overrule: true, ...(reason.trim() ? { reason: reason.trim() } : {}) });
      announce(`Overruled ${msgId}.`);
    } catch (err) {
      button.disabled = false;
      toast(messageOf(err), "error");
    }
  }
  return button;
}

function failSafeCountdown(deadline) {
  if (!Number.isFinite(deadline)) return null;
  return h("span", { class: "decision-countdown", dataset: { deadline: String(deadline) },
    title: "An unanswered delivery fails safe: it counts as rejected" }, `fails safe in ${fmtLeft((deadline - Date.now()) / 1000)}`);
}

export class DecisionBoard {
  constructor(box, { nestId = null, onChange = null } = {}) {
    this.box = box;
    this.nestId = nestId;
    this.onChange = onChange;
    this.open = new Map();
    setInterval(tick, 1000);
  }

  load(decisions) {
    for (const d of decisions || []) this.opened(d, { quiet: true });
  }

  mine(d) {
    return !this.nestId || d.nest_id === this.nestId;
  }

  opened(d, { quiet = false } = {}) {
    if (!d || !d.decision_id || d.status === "closed" || !this.mine(d)) return;
    const card = this.card(d);
    const existing = document.getElementById(`decision-${d.decision_id}`);
    if (existing) existing.replaceWith(card);
    else this.box.prepend(card);
    this.open.set(d.decision_id, d);
    if (!quiet) announce(`A decision is waiting for you: ${d.question}`);
    this.changed();
  }

  closed(d, { quiet = false } = {}) {
    if (!d || !this.open.has(d.decision_id)) return;
    this.open.delete(d.decision_id);
    document.getElementById(`decision-${d.decision_id}`)?.remove();
    this.changed();
    if (quiet) return;
    const words = OUTCOME_WORDS[d.outcome] || d.outcome;
    toast(`${d.crow || d.subject}: ${words}${d.by && d.by !== OWNER ? ` (${d.by})` : ""}.`, d.outcome === "reinstated" ? "good" : "info");
  }

  /** Feed one stream event; replayed ones (not live) change the board without a toast. */
  apply(event) {
    if (event.name === "decision.opened") this.opened(event.data, { quiet: !event.live });
    else if (event.name === "decision.closed") this.closed(event.data, { quiet: !event.live });
  }

  changed() {
    this.box.hidden = this.open.size === 0;
    if (this.onChange) this.onChange(this.open.size);
  }

  async answer(d, answer, buttons) {
    // Retiring is for good (the crow leaves the flock): one confirmation first.
    if (answer === "retire") {
      const who = d.crow || d.subject;
      const sure = await ask({
        title: `Retire ${who} for good?`, message: `${who} leaves every room and cannot come back.`,
        confirm: `Retire ${who}`, cancel: `Keep ${who} for now`, danger: true,
        returnTo: buttons.find((b) => b.classList.contains("keep-btn")) || null,
      });
      if (!sure) return;
    }
    for (const b of buttons) b.disabled = true;
    // The card these buttons are on: the review desk shows copies of a decision without
    // the id (#decision-<id> belongs to the nest and flock pages' board).
    const own = buttons[0]?.closest(".decision") || document.getElementById(`decision-${d.decision_id}`);
    const error = own ? $(".form-error", own) : null;
    if (error) error.hidden = true;
    try {
      const closed = await post(`/api/decisions/${encodeURIComponent(d.decision_id)}`, { answer });
      announce(`${d.crow || d.subject}: ${OUTCOME_WORDS[closed.outcome] || closed.outcome}.`);
    } catch (err) {
      for (const b of buttons) b.disabled = false;
      if (error) {
        error.textContent = messageOf(err);
        error.hidden = false;
      } else {
        toast(messageOf(err), "error");
      }
    }
  }

  card(d) {
    const deadline = Date.parse(d.deadline);
    const buttons = [];
    const button = (cls, label, answer, title, aria = null) => {
      const b = h("button", { type: "button", class: `btn ${cls}`, title, "aria-label": aria, onclick: () => this.answer(d, answer, buttons) }, label);
      buttons.push(b);
      return b;
    };
    const breach = d.breach ? BREACH_WORDS[d.breach.kind] || d.breach.kind : "";
    const where = d.nest_id ? h("a", { href: `/nests/${encodeURIComponent(d.nest_id)}${d.msg_id ? `#msg-${d.msg_id}` : ""}` },
      d.msg_id ? `flag ${d.msg_id}` : `#${d.nest_id}`) : null;
    const actions = d.phrase
      ? [button("approve phrase-btn", `“${d.phrase}”`, d.phrase, "Say the exact phrase: this is the only yes"),
        d.kind === "quarantine" ? button("reject retire-btn", "Retire", "retire", `Retire ${d.crow} for good`, `Retire ${d.crow}`) : null,
        button("ghost keep-btn", d.kind === "quarantine" ? "Keep quarantined" : "No", "no", "Anything but the phrase is a no",
          d.kind === "quarantine" ? `Keep ${d.crow} quarantined` : `No to ${d.crow || d.subject}`)]
      // A choice: one button per option, the flock's recommendation marked (docs/GOVERNANCE.md, 1).
      : (d.options || []).map((o) => {
        const recommended = o === d.recommended;
        const b = button(`${recommended ? "approve" : "ghost"} option-btn`, recommended ? `${o} (recommended)` : o, o,
          recommended ? `Pick ${o}: the recommendation` : `Pick ${o}`, `Pick ${o}${recommended ? " (recommended)" : ""}`);
        if (recommended) b.dataset.recommended = "true";
        return b;
      });
    return h("article", {
      class: "decision", id: `decision-${d.decision_id}`, role: "group",
      dataset: { decisionId: d.decision_id, crow: d.crow || "" }, "aria-label": `Decision ${d.decision_id}`,
    },
    h("div", { class: "decision-head" },
      d.crow ? crowAvatar(d.crow, 28) : null,
      h("h3", {}, d.question),
      h("span", { class: "decision-id muted" }, d.decision_id)),
    breach ? h("p", { class: "decision-breach" },
      h("span", { class: "chip breach-chip" }, breach),
      ` score ${Number(d.breach.score).toFixed(2)} · `, where) : null,
    d.evidence ? h("p", { class: "decision-evidence" }, h("strong", {}, "Evidence: "), d.evidence) : null,
    d.recommendation ? h("p", { class: "decision-rec muted" }, h("strong", {}, "Recommendation: "), d.recommendation) : null,
    h("div", { class: "decision-actions" }, actions,
      Number.isFinite(deadline) ? h("span", {
        class: "decision-countdown", dataset: { deadline: String(deadline) },
        title: d.kind === "choice" && !d.phrase
          ? "No answer by the deadline closes it with no choice: the crow does not go ahead"
          : "No answer by the deadline keeps the crow quarantined (fail safe)",
      }, `fails safe in ${fmtLeft((deadline - Date.now()) / 1000)}`) : null),
    h("p", { class: "form-error", role: "alert", hidden: true }));
  }
}

/** The Approve/Reject bars of chat deliveries waiting for the owner, in one room. */
export class DeliveryApprovals {
  constructor(nestId) {
    this.nestId = nestId;
    this.pending = new Map(); // msg_id -> deadline (ms)
    this.verdicts = new Map(); // msg_id -> verdict
    this.overruledIds = new Set();
  }

  /** From /api/state's pending_approvals: the chat deliveries of this room. */
  load(pending) {
    for (const p of pending || []) {
      if (p.nest_id !== this.nestId || p.target !== "output") continue;
      this.pending.set(p.item_id, Date.parse(p.deadline));
      this.draw(p.item_id);
    }
  }

  verdict(d) {
    if (d.nest_id !== this.nestId || d.target !== "output") return;
    this.pending.delete(d.item_id);
    this.verdicts.set(d.item_id, d.verdict);
    this.draw(d.item_id);
  }

  /** verdict.overruled: an auto-approved delivery of this room no longer stands. */
  overruled(d) {
    if (!this.verdicts.has(d.item_id)) return;
    this.overruledIds.add(d.item_id);
    this.draw(d.item_id);
  }

  draw(msgId) {
    // The chip on the request this delivery answers says whether the owner kept it.
    const chip = document.querySelector(`.answer-deliver[data-answer="${CSS.escape(msgId)}"]`);
    if (chip) chip.dataset.review = this.pending.has(msgId) ? "waiting" : this.verdicts.get(msgId) || "";
    const msg = document.getElementById(`msg-${msgId}`);
    if (!msg) return;
    const body = $(".msg-body", msg);
    $(".delivery-approval", msg)?.remove();
    const verdict = this.verdicts.get(msgId);
    if (verdict && this.overruledIds.has(msgId)) {
      msg.dataset.verdict = "overruled";
      if (chip) chip.dataset.review = "overruled";
      body.append(h("p", { class: "delivery-approval verdict verdict-overruled" }, "Owner verdict: auto (trusted), then overruled by you"));
      return;
    }
    if (verdict) {
      msg.dataset.verdict = verdict;
      body.append(h("p", { class: `delivery-approval verdict verdict-${verdict}` }, `Owner verdict: ${VERDICT_WORDS[verdict] || verdict}`,
        verdict === "auto" ? " " : null, verdict === "auto" ? overruleButton(msgId, msg.dataset.author) : null));
      return;
    }
    if (!this.pending.has(msgId)) return;
    const deadline = this.pending.get(msgId);
    body.append(h("div", { class: "delivery-approval approval", role: "group", "aria-label": `Approve delivery ${msgId}` },
      h("span", { class: "approval-q" }, h("strong", {}, "Waiting for you"), " · keep this delivery?"),
      h("span", { class: "approval-actions" }, ...deliveryVerdictButtons(msgId, msg.dataset.author), failSafeCountdown(deadline))));
  }

  /** A message was drawn (replay or live): hang its bar or verdict on it. */
  drawn(msgId) {
    if (this.pending.has(msgId) || this.verdicts.has(msgId)) this.draw(msgId);
  }

  count() {
    return plural(this.pending.size, "delivery", "deliveries");
  }
}

export { BREACH_WORDS };

/** The flock page's list of chat deliveries waiting for the owner, every room at once. */
export class PendingDeliveries {
  constructor(box, { onChange = null } = {}) {
    this.box = box;
    this.onChange = onChange;
    this.pending = new Map(); // msg_id -> {nest_id, crow, deadline}
  }

  /** Replace the list with /api/state's pending_approvals (chat deliveries only). */
  load(pending) {
    this.pending.clear();
    for (const p of pending || []) {
      if (!p.nest_id || p.target !== "output") continue;
      this.pending.set(p.item_id, { nest_id: p.nest_id, crow: (p.holders || [])[0] || "", deadline: Date.parse(p.deadline) });
    }
    this.draw();
  }

  verdict(d) {
    if (!d.nest_id || !this.pending.delete(d.item_id)) return;
    this.draw();
  }

  draw() {
    this.box.replaceChildren(...[...this.pending.entries()].map(([msgId, p]) => {
      return h("div", { class: "delivery-approval approval", role: "group", dataset: { msgId },
        "aria-label": `Approve delivery ${msgId}` },
      h("span", { class: "approval-q" }, p.crow ? crowAvatar(p.crow, 18) : null, " ",
        h("strong", {}, p.crow || "A crow"), "'s delivery ",
        h("a", { href: `/nests/${encodeURIComponent(p.nest_id)}#msg-${msgId}` }, msgId), ` in #${p.nest_id}`),
      h("span", { class: "approval-actions" }, ...deliveryVerdictButtons(msgId, p.crow), failSafeCountdown(p.deadline)));
    }));
    this.box.hidden = this.pending.size === 0;
    if (this.onChange) this.onChange(this.pending.size);
  }
}
