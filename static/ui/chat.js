// A nest's messages: drawing one message, hanging claims and deliveries on the request
// they answer, and the @-autocomplete of the composer.

import { h, fmtTime, whenWords } from "./dom.js";
import { crowAvatar, accentOf } from "./crow_art.js";
import { OWNER, HARNESS, KINDS } from "./vocab.js";
import { copyButton, mockBadge, renderedAnswer } from "./answers.js";

// A kind's badge is its own name; the kinds come from the server's one list.
export const KIND_WORDS = Object.fromEntries(KINDS.map((k) => [k, k]));

const TAGGED_WORDS = {
  jev: "Jev tagged this kind",
  header: "the crow's own header decided the kind (Jev was unsure)",
  disagreement: "Jev overrode the crow's header",
  default: "Jev was not sure enough of any kind and there was no header, so it became a say",
};

const MENTION = /(@[A-Za-z][A-Za-z0-9_-]{0,39})/g;

function probabilities(msg) {
  const probs = msg.probs || msg.jev_probs || (msg.jev && msg.jev.probs) || msg.probabilities;
  if (!probs || typeof probs !== "object") return "";
  return Object.entries(probs)
    .sort((a, b) => b[1] - a[1])
    .map(([k, p]) => `${k} ${(Number(p) * 100).toFixed(0)}%`)
    .join(" · ");
}

export function taggedTitle(msg) {
  const words = TAGGED_WORDS[msg.tagged_by] || `tagged by ${msg.tagged_by}`;
  const probs = probabilities(msg);
  return probs ? `${words}. Jev's probabilities: ${probs}` : `${words}.`;
}

function textWithMentions(text, members) {
  const known = new Set([...members, OWNER].map((m) => m.toLowerCase()));
  return text.split(MENTION).map((part) => {
    if (part.startsWith("@") && known.has(part.slice(1).toLowerCase())) {
      return h("span", { class: "mention", style: { "--accent": accentOf(part.slice(1)) } }, part);
    }
    return part;
  });
}

// The harness writes ids and UTC times (its messages are for crows too); the owner reads
// them in plain words: a time in the owner's own clock, from now ("in 8 min, at 9:41"); a
// message as a link with its first words; an expectation as a link to the panel with what
// is expected. The ids stay as the links' hover titles.
const HARNESS_BITS = /(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2}))|\b(exp-\d+)\b|\b([a-z0-9]+(?:-[a-z0-9]+)*-\d+)\b/g;

function firstWords(text, n = 8) {
  const words = String(text || "").trim().split(/\s+/);
  return words.length > n ? `${words.slice(0, n).join(" ")}…` : words.join(" ");
}

function harnessWords(text) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(HARNESS_BITS)) {
    const [whole, iso, expId, msgId] = m;
    let node = null;
    if (iso) {
      node = h("time", { datetime: iso, title: iso }, whenWords(iso));
    } else if (expId) {
      const row = document.querySelector(`[data-expectation="${CSS.escape(expId)}"] .exp-what`);
      node = h("a", { class: "ref exp-ref", href: "#expectations", title: expId },
        row ? `the expectation “${firstWords(row.textContent)}”` : "an expectation");
    } else if (msgId) {
      const target = document.getElementById(`msg-${msgId}`);
      if (target) {
        const said = target.querySelector(":scope > .msg-body > .msg-text")?.textContent || "";
        const who = target.dataset.author === OWNER ? "your" : `${target.dataset.author}'s`;
        node = h("a", { class: "ref", href: `#msg-${msgId}`, "data-ref": msgId, title: msgId }, `${who} “${firstWords(said)}”`);
      }
    }
    if (!node) continue;
    out.push(text.slice(last, m.index), node);
    last = m.index + whole.length;
  }
  out.push(text.slice(last));
  return out;
}

// A reply says what it answers in words ("re your request"); the message id is a detail,
// shown on hover or keyboard focus like the bubble's own id (docs/REVIEW.md).
const KIND_NOUNS = { say: "message", deliver: "delivery", refer: "referral" };

function refWords(msgId) {
  const target = document.getElementById(`msg-${msgId}`);
  if (!target) return "re an earlier message";
  const author = target.dataset.author;
  const whose = author === OWNER ? "your" : `${author}'s`;
  return `re ${whose} ${KIND_NOUNS[target.dataset.kind] || target.dataset.kind}`;
}

function refLink(msgId) {
  return h("a", { class: "ref", href: `#msg-${msgId}`, "data-ref": msgId, title: `Jump to ${msgId}` },
    h("span", { "aria-hidden": "true" }, "↩ "), h("span", { class: "ref-words" }, refWords(msgId)), " ",
    h("span", { class: "ref-id" }, msgId));
}

/** Badge a crow message the offline mock brain wrote, as list answers are badged. */
export function markMock(el) {
  if (el.querySelector(":scope > .msg-body > .mock-badge")) return;
  el.classList.add("by-mock");
  el.querySelector(".msg-text").before(mockBadge());
}

/** A delivery (an answer) or the owner's own message: show the server's rendered Markdown
 * of it (sanitised by nh3, docs/REVIEW.md) in place of its plain text. Code blocks and
 * tables get the answer's tools. */
export function showRendered(el, msg, html) {
  const text = el.querySelector(":scope > .msg-body > .msg-text");
  if (!text || !html) return;
  const label = msg.author === OWNER ? `your message ${msg.msg_id}` : `${msg.author}'s answer ${msg.msg_id}`;
  const rendered = renderedAnswer({ html, raw: msg.text, label });
  text.classList.add("msg-md");
  text.replaceChildren(rendered.querySelector(".answer-md"));
}

export function messageEl(msg, { members = [], onReply } = {}) {
  const mine = msg.author === OWNER;
  const compact = msg.kind === "claim";
  const who = msg.author === OWNER ? "You" : msg.author;
  const authorLink = [OWNER, HARNESS].includes(msg.author)
    ? h("span", { class: "author" }, who)
    : h("a", { class: "author", href: `/crows/${encodeURIComponent(msg.author)}` }, who);
  const li = h("li", {
    class: `msg kind-${msg.kind}${mine ? " mine" : ""}${compact ? " compact" : ""}${msg.mock ? " by-mock" : ""}`,
    id: `msg-${msg.msg_id}`,
    dataset: { msgId: msg.msg_id, kind: msg.kind, author: msg.author },
    style: { "--accent": accentOf(msg.author) },
  },
  h("div", { class: "msg-avatar" }, crowAvatar(msg.author, compact ? 22 : 34)),
  h("div", { class: "msg-body" },
    h("div", { class: "msg-head" },
      authorLink,
      h("span", { class: `kind kind-badge-${msg.kind}` }, KIND_WORDS[msg.kind] || msg.kind),
      msg.tagged_by ? h("span", { class: `tagged tagged-${msg.tagged_by}`, tabindex: "0", title: taggedTitle(msg), "aria-label": taggedTitle(msg) }, msg.tagged_by === "jev" ? "Jev" : msg.tagged_by) : null,
      // `to` links to whom it names, as `refers_to` links to the message (a crow's page).
      msg.to ? h("span", { class: "to" }, "→ ", msg.to === OWNER || msg.to === HARNESS
        ? h("span", { class: "mention", style: { "--accent": accentOf(msg.to) } }, msg.to === OWNER ? "you" : `@${msg.to}`)
        : h("a", { class: "mention", href: `/crows/${encodeURIComponent(msg.to)}`, style: { "--accent": accentOf(msg.to) } }, `@${msg.to}`)) : null,
      msg.refers_to ? refLink(msg.refers_to) : null,
      h("span", { class: "msg-id muted" }, msg.msg_id),
      msg.ts ? h("time", { class: "muted", datetime: msg.ts }, fmtTime(msg.ts)) : null),
    msg.mock ? mockBadge() : null,
    h("div", { class: "msg-text" }, msg.author === HARNESS ? harnessWords(msg.text) : textWithMentions(msg.text, members)),
    // A delivery is an answer: it copies like one on the review card (answers.js).
    msg.kind === "deliver" ? h("div", { class: "answer-tools" }, copyButton(msg.text, `Copy ${msg.author}'s answer ${msg.msg_id}`)) : null,
    // A group, so its label is allowed (axe: aria-prohibited-attr on a bare div).
    h("div", { class: "msg-answers", role: "group", "aria-label": "Claims and answers" }),
    onReply ? h("button", { class: "reply-btn", type: "button", "aria-label": `Reply to ${msg.msg_id}`, onclick: () => onReply(msg) }, "↩ reply") : null));
  if (msg.html) showRendered(li, msg, msg.html);
  return li;
}

/** Hang a claim, delivery or decline on the request it refers to. */
export function attachAnswer(requestEl, msg) {
  const box = requestEl.querySelector(".msg-answers");
  if (!box || box.querySelector(`[data-answer="${CSS.escape(msg.msg_id)}"]`)) return;
  const words = { claim: "claimed by", deliver: "delivered by", decline: "declined by" }[msg.kind];
  if (!words) return;
  box.append(h("a", {
    class: `answer-chip answer-${msg.kind}`, href: `#msg-${msg.msg_id}`, "data-ref": msg.msg_id,
    dataset: { answer: msg.msg_id }, style: { "--accent": accentOf(msg.author) },
  }, crowAvatar(msg.author, 16), `${words} ${msg.author}`));
  requestEl.classList.add(`has-${msg.kind}`);
}

/**
 * @-autocomplete for a textarea: a listbox of members that match what follows the "@"
 * before the caret. Arrow keys move, Enter or Tab picks, Escape closes.
 */
export class MentionBox {
  constructor(textarea, listbox, getMembers) {
    this.ta = textarea;
    this.list = listbox;
    this.getMembers = getMembers;
    this.matches = [];
    this.active = 0;
    this.ta.addEventListener("input", () => this.update());
    this.ta.addEventListener("click", () => this.update());
    this.ta.addEventListener("blur", () => setTimeout(() => this.close(), 150));
    this.ta.addEventListener("keydown", (e) => this.key(e));
  }

  get open() {
    return !this.list.hidden;
  }

  query() {
    const before = this.ta.value.slice(0, this.ta.selectionStart);
    const m = before.match(/(?:^|[^\w@])@([A-Za-z0-9_-]{0,39})$/);
    return m ? m[1] : null;
  }

  update() {
    const q = this.query();
    if (q === null) return this.close();
    const members = this.getMembers();
    this.matches = members.filter((name) => name.toLowerCase().startsWith(q.toLowerCase()));
    if (!this.matches.length) return this.close();
    this.active = Math.min(this.active, this.matches.length - 1);
    this.draw();
  }

  draw() {
    this.list.replaceChildren(...this.matches.map((name, i) => h("li", {
      id: `mention-${i}`, role: "option", class: `mention-option${i === this.active ? " active" : ""}`,
      "aria-selected": i === this.active ? "true" : "false",
      onmousedown: (e) => { e.preventDefault(); this.pick(i); },
    }, crowAvatar(name, 20), h("span", {}, name))));
    this.list.hidden = false;
    this.ta.setAttribute("aria-expanded", "true");
    this.ta.setAttribute("aria-activedescendant", `mention-${this.active}`);
  }

  close() {
    this.list.hidden = true;
    this.matches = [];
    this.active = 0;
    this.ta.setAttribute("aria-expanded", "false");
    this.ta.removeAttribute("aria-activedescendant");
  }

  key(e) {
    if (!this.open) return;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      const step = e.key === "ArrowDown" ? 1 : -1;
      this.active = (this.active + step + this.matches.length) % this.matches.length;
      this.draw();
    } else if (e.key === "Enter" || e.key === "Tab") {
      e.preventDefault();
      e.stopImmediatePropagation();
      this.pick(this.active);
    } else if (e.key === "Escape") {
      e.preventDefault();
      this.close();
    }
  }

  pick(i) {
    const name = this.matches[i];
    if (!name) return;
    const caret = this.ta.selectionStart;
    const before = this.ta.value.slice(0, caret).replace(/@([A-Za-z0-9_-]{0,39})$/, `@${name} `);
    const after = this.ta.value.slice(caret);
    this.ta.value = before + after.replace(/^\s/, "");
    this.ta.selectionStart = this.ta.selectionEnd = before.length;
    this.close();
    this.ta.focus();
  }
}
