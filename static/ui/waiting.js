// Never miss a waiting approval (docs/REVIEW.md): on every page, the count of approvals
// and decisions waiting for the owner in the tab title and on the nav's Review link; a
// browser notification when something starts waiting while the tab is hidden (permission
// is asked only when the owner clicks "Notify me", never on load); and a warning when a
// card is within a minute of its fail-safe deadline.
//
// The count is read from GET /api/review: again soon after any live event the page's own
// stream delivers (stream.js re-dispatches them as `crows:event`), and every few seconds
// for pages whose stream is narrowed to one list or room.

import { $ } from "./dom.js";
import { get } from "./api.js";

const POLL_MS = 8000;
const WARN_S = 60;
let baseTitle = document.title.replace(/^\(\d+\)\s+/, "");
let known = null; // keys seen at the last read (null before the first)
let cards = [];
let timer = null;
const warned = new Set();
const listeners = new Set();

/** A page that names itself after loading (a nest's name) sets its title here, so the
 * waiting count stays in front of it. */
export function setPageTitle(title) {
  baseTitle = title;
  draw();
}

/** Pages with their own queue view hear each fresh read (avoids a second fetch). */
export function onWaiting(fn) {
  listeners.add(fn);
  if (known !== null) fn(cards);
}

export function refreshWaitingSoon(ms = 300) {
  clearTimeout(timer);
  timer = setTimeout(read, ms);
}

function describe(card) {
  const what = { triage: "triage call", output: "answer", delivery: "chat delivery", decision: "decision" }[card.kind] || card.kind;
  return `${what}: ${card.text || card.item_id}`.slice(0, 140);
}

function notifyHidden(fresh) {
  if (!fresh.length || !document.hidden) return;
  if (!("Notification" in window) || Notification.permission !== "granted") return;
  const body = fresh.length === 1 ? describe(fresh[0]) : `${fresh.length} new things wait for you, first ${describe(fresh[0])}`;
  try {
    const note = new Notification("so-many-crows: waiting for you", { body, tag: "crows-waiting" });
    note.onclick = () => { window.focus(); location.href = "/review"; };
  } catch (err) {
    console.warn("crows: could not show a notification", err);
  }
}

function draw() {
  const n = cards.length;
  document.title = n ? `(${n}) ${baseTitle}` : baseTitle;
  const badge = $("#nav-count");
  if (badge) {
    badge.dataset.count = String(n);
    $("#nav-count-n").textContent = String(n);
  }
  const link = $("#nav-review");
  if (link) link.setAttribute("aria-label", n ? `Review, ${n} waiting` : "Review, nothing waiting");
}

function tickWarning() {
  const box = $("#failsafe-warning");
  if (!box) return;
  const now = Date.now();
  const urgent = cards
    .map((c) => ({ c, left: (Date.parse(c.deadline) - now) / 1000 }))
    .filter(({ left }) => left > 0 && left <= WARN_S)
    .sort((a, b) => a.left - b.left);
  if (!urgent.length) {
    box.hidden = true;
    return;
  }
  const { c, left } = urgent[0];
  const text = `${urgent.length === 1 ? "One card" : `${urgent.length} cards`} will fail safe within a minute: ${describe(c)} in ${Math.ceil(left)} s. `;
  // Only rewrite the alert when a new card becomes urgent, so screen readers hear it once.
  if (!warned.has(c.key) || box.hidden) {
    warned.add(c.key);
    box.replaceChildren(text, Object.assign(document.createElement("a"), { href: "/review", textContent: "Review now" }));
    box.hidden = false;
  } else {
    box.firstChild.textContent = text;
  }
}

async function read() {
  clearTimeout(timer);
  try {
    const data = await get("/api/review");
    cards = data.cards || [];
  } catch {
    timer = setTimeout(read, POLL_MS);
    return; // the page's own error reporting covers a server that is away
  }
  const keys = new Set(cards.map((c) => c.key));
  if (known !== null) notifyHidden(cards.filter((c) => !known.has(c.key)));
  known = keys;
  draw();
  tickWarning();
  for (const fn of listeners) fn(cards);
  timer = setTimeout(read, POLL_MS);
}

function setupNotifyButton() {
  const button = $("#notify-btn");
  if (!button || !("Notification" in window)) return;
  const show = () => {
    button.hidden = Notification.permission === "granted" || Notification.permission === "denied";
  };
  show();
  button.addEventListener("click", async () => {
    try {
      await Notification.requestPermission();
    } finally {
      show();
    }
  });
}

const WATCHED = new Set([
  "item.triaged", "item.answered", "verdict", "verdict.overruled", "item.skipped", "item.retried",
  "decision.opened", "decision.closed", "nest.message", "list.finished",
]);
window.addEventListener("crows:event", (e) => {
  if (WATCHED.has(e.detail.name)) refreshWaitingSoon();
});
document.addEventListener("visibilitychange", () => { if (!document.hidden) refreshWaitingSoon(50); });
setInterval(tickWarning, 1000);
setupNotifyButton();
read();
