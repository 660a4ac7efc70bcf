// The review queue (docs/REVIEW.md): one card per thing waiting for the owner (a triage
// call, a list answer, a chat delivery, an owner decision), oldest deadline first, with
// the item's text, the plan or the rendered answer, the crows and a countdown. The same
// cards appear on /review and inline on a list's and a nest's page.
//
// Keyboard (inside the queue): j/k move, a approves, r rejects (asks for a reason),
// e edits the answer, ? shows the keys. After a verdict, focus moves to the next card.

import { ask } from "./dialog.js";
import { h, $, $$, append, plural } from "./dom.js";
import { post } from "./api.js";
import { toast, announce, messageOf } from "./notify.js";
import { crowAvatar } from "./crow_art.js";
import { renderedAnswer, term } from "./answers.js";
import { DecisionBoard, fmtLeft } from "./decisions.js";
import { onWaiting, refreshWaitingSoon } from "./waiting.js";

const KIND_WORDS = { triage: "Triage call", output: "Answer", delivery: "Chat delivery", decision: "Decision" };
const KEYS = [
  ["j", "next card"], ["k", "previous card"], ["a", "approve"], ["r", "reject, with a reason"],
  ["e", "edit the answer, then approve your text"], ["?", "show or hide these keys (Esc hides them)"],
];

function where(card) {
  if (card.list_id) return h("a", { href: `/lists/${encodeURIComponent(card.list_id)}#item-${card.item_id}` }, `list ${card.list_id}`);
  if (card.nest_id) return h("a", { href: `/nests/${encodeURIComponent(card.nest_id)}` }, `#${card.nest_id}`);
  return null;
}

function planBlock(plan) {
  if (!plan) return null;
  return h("div", { class: "review-plan" },
    h("p", {}, "The Sentry's plan: fly it ", term(plan.mode), " as ", h("strong", {}, plan.task_type), "."),
    plan.reason ? h("p", { class: "reason" }, plan.reason) : null,
    plan.subtasks && plan.subtasks.length ? h("ol", { class: "subtasks" }, plan.subtasks.map((s) => h("li", {}, s))) : null);
}

/** Whose work a card judges, for its buttons' names: "Soot's answer", "the flock's triage call". */
function whose(card) {
  if (card.kind === "triage") return "the flock's triage call";
  const crows = [...new Set((card.crows && card.crows.length ? card.crows : card.holders || []).filter((c) => c !== "flock"))];
  const what = card.kind === "delivery" ? "delivery" : "answer";
  return crows.length ? `${crows.join(" and ")}'s ${what}` : `the ${what}`;
}

export class ReviewQueue {
  /**
   * @param {HTMLElement} box
   * @param {object} opts
   * @param {string} [opts.listId]   only this list's cards (the list page)
   * @param {string} [opts.nestId]   only this room's cards (a nest page)
   * @param {boolean} [opts.global]  keys work anywhere on the page (/review)
   */
  constructor(box, { listId = "", nestId = "", global = false, onCount = null, skipDecisions = false } = {}) {
    this.box = box;
    this.skipDecisions = skipDecisions;
    this.listId = listId;
    this.nestId = nestId;
    this.global = global;
    this.onCount = onCount;
    this.cards = [];
    this.nodes = new Map();
    this.busy = new Set();
    this.decisions = new DecisionBoard(h("div"), {});
    this.list = h("div", { class: "review-cards", role: "list" });
    this.countEl = h("span", { class: "muted review-n" });
    this.allButton = h("button", { type: "button", class: "btn approve", onclick: () => this.approveAll() }, "Approve all shown");
    this.help = h("div", { class: "review-keys", id: `review-keys-${Math.random().toString(36).slice(2, 8)}`, hidden: true },
      h("h3", {}, "Keys"),
      h("dl", {}, KEYS.map(([k, what]) => [h("dt", {}, h("kbd", {}, k)), h("dd", {}, what)])));
    // "Nothing is waiting" only once the queue has been read: until then it says it is reading.
    this.empty = h("p", { class: "empty review-empty", dataset: { state: "loading" } }, "Reading what waits for you…");
    box.replaceChildren(
      h("div", { class: "review-bar" }, this.countEl, this.allButton,
        h("button", { type: "button", class: "btn ghost small", "aria-expanded": "false",
          onclick: (e) => this.toggleHelp(e.currentTarget) }, "Keys (?)")),
      this.help, this.empty, this.list);
    (global ? document : box).addEventListener("keydown", (e) => this.onKey(e));
    onWaiting((cards) => this.set(cards));
    setInterval(() => this.tick(), 1000);
  }

  mine(card) {
    if (this.skipDecisions && card.kind === "decision") return false;
    if (this.listId && card.list_id !== this.listId) return false;
    if (this.nestId && card.nest_id !== this.nestId) return false;
    return true;
  }

  set(all) {
    const cards = all.filter((c) => this.mine(c));
    const active = document.activeElement;
    const focusedNode = active ? active.closest?.(".review-card") : null;
    const focusedKey = focusedNode && this.box.contains(focusedNode) ? focusedNode.dataset.key : null;
    const focusedIndex = focusedKey ? this.cards.findIndex((c) => c.key === focusedKey) : -1;
    this.cards = cards;
    const keep = new Map();
    for (const card of cards) {
      const old = this.nodes.get(card.key);
      const sig = JSON.stringify(card);
      // A card that has not changed, or that the owner is typing in (a reason, an edit),
      // is left as it is, so focus and half-typed text stay.
      const same = old && (old.dataset.sig === sig || old.querySelector(".review-form:not([hidden])") || this.busy.has(card.key));
      const node = same ? old : this.cardEl(card);
      node.dataset.sig = sig;
      keep.set(card.key, node);
    }
    this.nodes = keep;
    this.place(cards.map((c) => keep.get(c.key)));
    // Moving a node out of the page and back blurs what it holds: if that happened to the
    // box the owner types in (a reason, an edit), give it back its focus and caret.
    if (active && active !== document.activeElement && active.isConnected && focusedKey && keep.get(focusedKey)?.contains(active)) {
      const caret = typeof active.selectionStart === "number" ? [active.selectionStart, active.selectionEnd] : null;
      active.focus({ preventScroll: true });
      if (caret) active.setSelectionRange(...caret);
    }
    this.empty.hidden = cards.length > 0;
    if (this.empty.dataset.state === "loading") {
      this.empty.dataset.state = "empty";
      this.empty.textContent = "Nothing is waiting for you.";
    }
    this.allButton.hidden = !cards.some((c) => c.kind !== "decision");
    this.countEl.textContent = plural(cards.length, "card") + " waiting";
    if (this.onCount) this.onCount(cards.length);
    if (focusedKey) {
      const again = keep.get(focusedKey);
      if (again && !again.contains(document.activeElement)) again.focus({ preventScroll: false });
      else if (!again) this.focusAt(focusedIndex);
    }
  }

  /** Put the cards in this order, moving only the nodes out of place, so the card the
   * owner is in (and the box they are typing in) stays in the page and keeps its focus. */
  place(nodes) {
    nodes.forEach((node, i) => {
      const there = this.list.children[i];
      if (there !== node) this.list.insertBefore(node, there || null);
    });
    while (this.list.children.length > nodes.length) this.list.lastElementChild.remove();
  }

  focusAt(index) {
    const nodes = this.cards.map((c) => this.nodes.get(c.key));
    if (!nodes.length) {
      this.box.querySelector(".review-bar button:last-child")?.focus();
      return;
    }
    nodes[Math.max(0, Math.min(index, nodes.length - 1))].focus();
  }

  current() {
    const node = document.activeElement?.closest?.(".review-card");
    return node && this.box.contains(node) ? node : null;
  }

  toggleHelp(button) {
    this.help.hidden = !this.help.hidden;
    const b = button || this.box.querySelector(".review-bar [aria-expanded]");
    b?.setAttribute("aria-expanded", String(!this.help.hidden));
  }

  onKey(e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const tag = (e.target.tagName || "").toLowerCase();
    if (["input", "textarea", "select"].includes(tag) || e.target.isContentEditable) return;
    if (!this.global && !this.box.contains(e.target)) return;
    let node = this.current();
    // A card with a reason or an edit open takes no shortcuts: letters typed there belong
    // to the box, even if the focus slipped from it onto the card.
    if (node?.querySelector(".review-form:not([hidden])") && e.key !== "?") return;
    if (!node && ["a", "r"].includes(e.key) && this.cards.length) {
      // Nothing chosen yet: `a` and `r` act on the top card (the oldest deadline), so the
      // first `a` on the queue approves it instead of only choosing it.
      this.focusAt(0);
      node = this.current();
    }
    const index = node ? this.cards.findIndex((c) => c.key === node.dataset.key) : -1;
    const card = index >= 0 ? this.cards[index] : null;
    switch (e.key) {
      case "j":
        this.focusAt(index + 1);
        break;
      case "k":
        this.focusAt(index < 0 ? 0 : index - 1);
        break;
      case "a":
        if (!card) return;
        if (card.kind === "decision") node.querySelector(".decision-actions button")?.focus();
        else this.verdict(card, true);
        break;
      case "r":
        if (!card) return;
        if (card.kind !== "decision") this.openForm(card, "reject");
        break;
      case "e":
        if (card && (card.kind === "output" || card.kind === "delivery")) this.openForm(card, "edit");
        break;
      case "?":
        this.toggleHelp();
        break;
      case "Escape":
        if (this.help.hidden) return;
        this.toggleHelp();
        break;
      default:
        return;
    }
    e.preventDefault();
  }

  tick() {
    const now = Date.now();
    for (const el of this.box.querySelectorAll(".review-countdown[data-deadline]")) {
      const left = (Number(el.dataset.deadline) - now) / 1000;
      el.textContent = left > 0 ? `fails safe in ${fmtLeft(left)}` : "timing out…";
      el.classList.toggle("urgent", left < 60);
    }
  }

  cardEl(card) {
    const deadline = Date.parse(card.deadline);
    const label = `${KIND_WORDS[card.kind] || card.kind}: ${card.text || card.item_id}`.slice(0, 160);
    const node = h("article", {
      class: `review-card review-${card.kind}`, tabindex: "0", role: "listitem",
      dataset: { key: card.key, itemId: card.item_id, kind: card.kind }, "aria-label": label,
    });
    if (card.kind === "decision") {
      const inner = this.decisions.card(card.decision);
      inner.removeAttribute("id"); // the nest and flock pages own #decision-<id>
      append(node, [h("header", { class: "review-head" },
        h("span", { class: "chip kind-chip" }, "Decision"), where(card),
        h("span", { class: "review-countdown", dataset: { deadline: String(deadline) } }, `fails safe in ${fmtLeft((deadline - Date.now()) / 1000)}`)),
      inner]);
      return node;
    }
    const error = h("p", { class: "form-error", role: "alert", hidden: true });
    const button = (cls, text, aria, onclick) => h("button", { type: "button", class: `btn ${cls}`, "aria-label": aria, onclick }, text);
    const short = (card.text || card.item_id).slice(0, 60);
    append(node, [
      h("header", { class: "review-head" },
        h("span", { class: "chip kind-chip" }, KIND_WORDS[card.kind] || card.kind),
        where(card),
        card.attempt > 1 ? h("span", { class: "chip" }, `attempt ${card.attempt}`) : null,
        h("span", { class: "review-countdown", dataset: { deadline: String(deadline) },
          title: "An unanswered card fails safe at its deadline: it counts as rejected" },
        `fails safe in ${fmtLeft((deadline - Date.now()) / 1000)}`)),
      h("h3", { class: "review-text" }, card.text || card.item_id),
      card.owner_note ? h("p", { class: "owner-note" }, h("strong", {}, "Your note: "), card.owner_note) : null,
      planBlock(card.plan),
      card.kind !== "triage"
        ? renderedAnswer({ html: card.answer_html, raw: card.answer, mock: card.mock, label: `the answer to ${short}` })
        : null,
      card.crows.length || card.holders.length
        ? h("ul", { class: "crew", "aria-label": "Crows" }, (card.crows.length ? card.crows : card.holders).map((c) =>
          h("li", { class: "crew-chip" }, c === "flock" ? null : crowAvatar(c, 20),
            c === "flock" ? term("flock", "the flock") : h("a", { href: `/crows/${encodeURIComponent(c)}` }, c))))
        : null,
      h("div", { class: "review-actions" },
        button("approve", "Approve", `Approve ${whose(card)}: ${short}`, () => this.verdict(card, true)),
        button("reject", "Reject…", `Reject ${whose(card)} with a reason: ${short}`, () => this.openForm(card, "reject")),
        card.kind !== "triage" ? button("ghost", "Edit…", `Edit and approve ${whose(card)}: ${short}`, () => this.openForm(card, "edit")) : null),
      this.form(card, "reject"),
      card.kind !== "triage" ? this.form(card, "edit") : null,
      error]);
    return node;
  }

  form(card, which) {
    const id = `${which}-${card.key.replace(/[^A-Za-z0-9_-]/g, "_")}`;
    const field = h("textarea", { id, rows: which === "edit" ? 8 : 2, class: "review-input" });
    if (which === "edit") field.value = card.answer || "";
    const submit = () => (which === "edit" ? this.verdict(card, true, { edited_text: field.value }) : this.verdict(card, false, { reason: field.value }));
    field.addEventListener("keydown", (e) => {
      if (e.key === "Escape") {
        e.preventDefault();
        this.closeForm(card, which);
      } else if (e.key === "Enter" && (which === "reject" ? !e.shiftKey : e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        submit();
      }
    });
    return h("div", { class: `review-form review-form-${which}`, hidden: true },
      h("label", { for: id }, which === "edit" ? "Your corrected answer (Ctrl+Enter approves it)" : "Why reject it? (optional; Enter rejects, Esc cancels)"),
      field,
      h("div", { class: "form-row" },
        h("button", { type: "button", class: `btn ${which === "edit" ? "approve" : "reject"}`, onclick: submit },
          which === "edit" ? "Approve my text" : "Reject"),
        h("button", { type: "button", class: "btn ghost", onclick: () => this.closeForm(card, which) }, "Cancel")));
  }

  openForm(card, which) {
    const node = this.nodes.get(card.key);
    if (!node) return;
    const form = node.querySelector(`.review-form-${which}`);
    if (!form) return;
    for (const other of node.querySelectorAll(".review-form")) other.hidden = other !== form;
    form.hidden = false;
    form.querySelector("textarea").focus();
  }

  closeForm(card, which) {
    const node = this.nodes.get(card.key);
    if (!node) return;
    node.querySelector(`.review-form-${which}`).hidden = true;
    node.focus();
  }

  async verdict(card, approve, extra = {}) {
    if (this.busy.has(card.key)) return;
    const node = this.nodes.get(card.key);
    const index = this.cards.findIndex((c) => c.key === card.key);
    const error = node ? $(".form-error", node) : null;
    const body = { item_id: card.item_id, target: card.target, approve };
    if (extra.reason && extra.reason.trim()) body.reason = extra.reason.trim();
    if (extra.edited_text !== undefined) body.edited_text = extra.edited_text;
    this.busy.add(card.key);
    if (node) for (const b of $$("button", node)) b.disabled = true;
    try {
      await post("/api/verdicts", body);
    } catch (err) {
      this.busy.delete(card.key);
      if (node) for (const b of $$("button", node)) b.disabled = false;
      if (error) {
        error.textContent = messageOf(err);
        error.hidden = false;
      } else toast(messageOf(err), "error");
      return false;
    }
    this.busy.delete(card.key);
    announce(`${extra.edited_text !== undefined ? "Approved your edit of" : approve ? "Approved" : "Rejected"} ${card.text || card.item_id}.`);
    // Take the card away at once and keep the owner's place: focus the next card.
    this.cards = this.cards.filter((c) => c.key !== card.key);
    this.nodes.delete(card.key);
    node?.remove();
    this.empty.hidden = this.cards.length > 0;
    this.countEl.textContent = plural(this.cards.length, "card") + " waiting";
    if (!extra.bulk) this.focusAt(index);
    refreshWaitingSoon(150);
    return true;
  }

  async approveAll() {
    const shown = this.cards.filter((c) => c.kind !== "decision");
    if (!shown.length) return;
    const sure = await ask({
      title: `Approve all ${plural(shown.length, "card")} shown?`,
      message: "Decisions are left for you to answer one by one.",
      confirm: `Approve ${plural(shown.length, "card")}`, returnTo: this.allButton,
    });
    if (!sure) return;
    let ok = 0;
    for (const card of shown) if (await this.verdict(card, true, { bulk: true })) ok += 1;
    toast(`Approved ${ok} of ${shown.length}.`, ok === shown.length ? "good" : "error");
    this.focusAt(0);
  }
}
