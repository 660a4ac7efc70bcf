// An answer as the owner reads it: the server's rendered Markdown (markdown-it-py, then
// sanitised by nh3: the one server-made markup the pages insert, docs/REVIEW.md), a copy
// button for the whole answer and one on each code block, and the offline mock badge.

import { h } from "./dom.js";
import { toast } from "./notify.js";

async function copyText(text, what) {
  try {
    await navigator.clipboard.writeText(text);
    toast(`Copied ${what}.`, "good", { timeout: 2000 });
    return true;
  } catch {
    toast("The browser would not let the page copy; select the text and copy it instead.", "error");
    return false;
  }
}

export function copyButton(text, label, what = "the answer") {
  const button = h("button", { type: "button", class: "btn ghost small copy-btn", "aria-label": label }, "Copy");
  button.addEventListener("click", async () => {
    if (await copyText(text, what)) {
      button.textContent = "Copied";
      button.dataset.copied = "true";
      setTimeout(() => { button.textContent = "Copy"; }, 1500);
    }
  });
  return button;
}

export function mockBadge() {
  return h("a", { class: "mock-badge", href: "/glossary#mock-brain",
    title: "No model is connected: this text is a placeholder plan, not a real answer" },
  "offline mock brain: placeholder answer");
}

/** The rendered answer: `html` is the server's sanitised HTML; `raw` is what Copy copies. */
export function renderedAnswer({ html, raw, mock = false, label = "the answer" }) {
  const body = h("div", { class: "answer-md" });
  if (html) body.innerHTML = html; // sanitised on the server (nests/render.py)
  else body.textContent = raw || "";
  for (const pre of body.querySelectorAll("pre")) {
    const code = pre.textContent;
    pre.tabIndex = 0; // a code block may scroll sideways: reachable by keyboard
    pre.before(h("div", { class: "code-tools" }, copyButton(code, "Copy this code block", "the code")));
  }
  // A table wider than a phone scrolls in its own box, never the page; the box is a named
  // region the keyboard can reach, as a scrolling region must be (axe: scrollable-region-focusable).
  body.querySelectorAll("table").forEach((table, i, all) => {
    const name = all.length > 1 ? `Table ${i + 1} in ${label}` : `Table in ${label}`;
    const wrap = h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": name });
    table.replaceWith(wrap);
    wrap.append(table);
  });
  for (const a of body.querySelectorAll("a[href]")) {
    a.setAttribute("target", "_blank");
    a.setAttribute("rel", "noopener noreferrer");
  }
  return h("div", { class: "answer-rendered" },
    mock ? mockBadge() : null,
    body,
    h("div", { class: "answer-tools" }, copyButton(raw || "", `Copy ${label}`)));
}

/** A word with its glossary entry one click (or hover) away. */
export const GLOSSARY = {
  murder: "three crows answer independently; the Elder synthesises",
  split: "cut into parts, one crow each; the Elder merges",
  solo: "one crow answers",
  elder: "the crow who merges or synthesises",
  jev: "the fast local classifier",
  stranger: "trust level 0", regular: "trust level 1", trusted: "trust level 2: work is auto-approved",
  auto: "approved by trust, not by you",
  triage: "the Sentry's plan for an item",
};

export function term(word, text = word) {
  const key = String(word).toLowerCase();
  const anchor = ["stranger", "regular", "trusted"].includes(key) ? "trust-levels" : key;
  return h("a", { class: "term", href: `/glossary#${anchor}`, title: GLOSSARY[key] || "in the glossary" }, text);
}
