// The flock page: the crows on their wire, the list composer, and every recent list.

import { $, h, keepFocus, uiConfig, plural } from "../dom.js";
import { get, post, ApiError } from "../api.js";
import { Stream } from "../stream.js";
import { FlockStage } from "../flock.js";
import { inputsFor } from "../rive_inputs.js";
import { ListBook, ListStates, ownerHandlers, renderList, startCountdowns, listTitle } from "../lists.js";
import { showFormError, clearFormError, toast, announce, messageOf } from "../notify.js";
import { DecisionBoard, PendingDeliveries } from "../decisions.js";
import { LEVEL_WORDS, OWNER } from "../vocab.js";

const TRUST_WORDS = LEVEL_WORDS;
const ui = uiConfig();
const config = ui.config || {};
const book = new ListBook();
const stage = new FlockStage($("#wire"), { summary: $("#flock-summary") });
const sending = new Set();
const deadlines = new Map();
const listsEl = $("#lists");
// The governance panel: open decisions, and chat deliveries waiting for approval.
function drawGovernancePanel() {
  const decisions = board.open.size;
  const deliveries = chatDeliveries.pending.size;
  $("#decisions-panel").hidden = decisions + deliveries === 0;
  $("#deliveries-title").hidden = deliveries === 0;
  $("#decisions-count").textContent = [decisions ? plural(decisions, "decision") : "",
    deliveries ? plural(deliveries, "delivery", "deliveries") : ""].filter(Boolean).join(" · ");
}
const board = new DecisionBoard($("#decisions"), { onChange: () => drawGovernancePanel() });
const chatDeliveries = new PendingDeliveries($("#pending-deliveries"), { onChange: () => drawGovernancePanel() });
let pendingTimer = null;
function refreshChatDeliveriesSoon() {
  clearTimeout(pendingTimer);
  pendingTimer = setTimeout(async () => {
    try {
      chatDeliveries.load((await get("/api/state")).pending_approvals);
    } catch (err) {
      toast(`Could not read the deliveries waiting for you: ${messageOf(err)}`, "error");
    }
  }, 400);
}

// What the owner typed as a rejection's reason, per item and target, kept across redraws.
const reasons = new Map();
const ctx = { config, sending, deadlines, reasons, onVerdict: sendVerdict, ...ownerHandlers };
const states = new ListStates(ctx, (listId) => {
  const list = book.lists.get(listId);
  if (list) drawList(list);
});

// Open lists show in full. A list already finished when the page opened is one line that
// opens on a click (its card drawn then); one that finishes while the owner watches stays
// in full until the next visit.
const finishedLive = new Set();
const openLines = new Set();

function finishedLine(list) {
  const items = list.items.size;
  const first = [...list.items.values()].sort((a, b) => a.n - b.n)[0];
  const words = first && first.text ? (first.text.length > 70 ? `${first.text.slice(0, 67)}…` : first.text) : "";
  const line = h("details", {
    class: "list-line", id: `list-${list.list_id}`, dataset: { listId: list.list_id }, open: openLines.has(list.list_id),
  },
  h("summary", {},
    h("span", { class: "list-line-title" }, listTitle(list)),
    words ? h("span", { class: "list-line-text" }, `“${words}”${items > 1 ? ` and ${plural(items - 1, "more")}` : ""}`) : null,
    h("span", { class: "list-line-meta muted" },
      `${list.nest_id ? `#${list.nest_id} · ` : ""}${plural(items, "item")}${list.requester && list.requester !== OWNER ? ` from ${list.requester}` : ""}`),
    h("span", { class: "list-status is-finished" }, "finished")));
  const fill = () => {
    if (line.open && !line.querySelector(".list-card")) {
      const card = renderList(list, ctx);
      card.removeAttribute("id");
      line.append(card);
    }
  };
  line.addEventListener("toggle", () => {
    if (line.open) openLines.add(list.list_id);
    else openLines.delete(list.list_id);
    fill();
  });
  fill();
  return line;
}

function drawList(list) {
  const existing = document.getElementById(`list-${list.list_id}`);
  $("#lists-empty")?.remove();
  const redraw = () => {
    const card = list.finished && !finishedLive.has(list.list_id) ? finishedLine(list) : renderList(list, ctx);
    if (existing) existing.replaceWith(card);
    else listsEl.prepend(card);
  };
  if (existing) keepFocus(existing, redraw);
  else redraw();
  $("#lists-count").textContent = plural(book.lists.size, "list");
}

function drawAwaiting() {
  const pending = book.pendingApprovals();
  const box = $("#awaiting");
  box.hidden = pending.length === 0;
  if (!pending.length) return;
  const short = (text) => (text.length > 60 ? `${text.slice(0, 57)}…` : text);
  $("#awaiting-text").replaceChildren(
    `${plural(pending.length, "approval")} waiting: `,
    ...pending.slice(0, 6).flatMap(({ item, target }, i) => [
      i ? "; " : "",
      h("a", { href: `#item-${item.item_id}` }, `“${short(item.text || item.item_id)}” (${target === "triage" ? "triage call" : "answer"})`),
    ]),
    pending.length > 6 ? `, and ${pending.length - 6} more` : "",
    " ",
    h("a", { class: "btn small", href: "/review" }, "Review them with the keyboard →"),
  );
}

async function sendVerdict(item, target, approve, reason = "") {
  const key = `${item.item_id}:${target}`;
  const list = book.lists.get(findListOf(item));
  sending.add(key);
  if (item.errors) delete item.errors[target];
  if (list) drawList(list);
  try {
    await post("/api/verdicts", { item_id: item.item_id, target, approve, ...(reason ? { reason } : {}) });
    reasons.delete(key);
    announce(`${approve ? "Approved" : "Rejected"} the ${target} of item ${item.item_id}.`);
  } catch (err) {
    item.errors = { ...(item.errors || {}), [target]: messageOf(err) };
    // Said in a toast too: the item's own line goes once the verdict that won arrives
    // (another tab, the fail-safe), and the owner must still hear why theirs did not count.
    toast(`Your ${approve ? "approval" : "rejection"} of ${item.item_id} did not count: ${messageOf(err)}`, "error");
  } finally {
    sending.delete(key);
    if (list) drawList(list);
  }
}

function findListOf(item) {
  for (const list of book.lists.values()) if (list.items.has(item.item_id)) return list.list_id;
  return null;
}

// The server keeps each approval's exact deadline; the page starts from the event's time
// plus the timeout and then takes the server's word for it.
let deadlineTimer = null;
function refreshDeadlinesSoon() {
  clearTimeout(deadlineTimer);
  deadlineTimer = setTimeout(async () => {
    try {
      readDeadlines(await get("/api/state"));
    } catch (err) {
      toast(`Could not read the approval deadlines: ${messageOf(err)}`, "error");
      return;
    }
    for (const list of book.lists.values()) {
      if ([...list.items.values()].some((i) => Object.keys(i.pending).length)) drawList(list);
    }
  }, 700);
}

function readDeadlines(state) {
  for (const p of state.pending_approvals || []) {
    const when = Date.parse(p.deadline);
    if (p.item_id && p.target && Number.isFinite(when)) deadlines.set(`${p.item_id}:${p.target}`, when);
  }
}

function onEvent(event) {
  if (event.name === "list.finished" && event.live) finishedLive.add(event.data.list_id);
  stage.apply(inputsFor(event.name, event.data), { live: event.live });
  board.apply(event);
  if (event.name === "verdict") chatDeliveries.verdict(event.data);
  if (event.live && event.name === "nest.message" && event.data.kind === "deliver") refreshChatDeliveriesSoon();
  const list = book.apply(event);
  if (list) {
    drawList(list);
    drawAwaiting();
    if (ListStates.touches(event.name)) states.soon(list.list_id, event.live ? 250 : 1500);
  }
  if (!event.live) return;
  const d = event.data;
  if (d.needs_approval) refreshDeadlinesSoon();
  switch (event.name) {
    case "trust.changed": {
      const up = d.to > d.from;
      toast(`${d.holder} is now ${TRUST_WORDS[d.to] ?? d.to} for ${d.task_type} ${up ? "▲" : "▼"}`, up ? "good" : "info");
      break;
    }
    case "requester.pranked":
      showPrank(d.message, d.cooldown_s);
      break;
    case "nest.created":
      addNestOption(d.nest_id, d.name);
      break;
    case "list.finished":
      announce(`List ${d.list_id} finished.`);
      break;
    case "item.answered":
      if (d.needs_approval) announce(`Item ${d.item_id} has an answer waiting for your approval.`);
      break;
    case "item.triaged":
      if (d.needs_approval) announce(`Item ${d.item_id} needs your triage call.`);
      break;
    case "crow.hatched":
      stage.addCrow({ name: d.crow, epithet: d.epithet, status: "active" });
      stage.updateSummary();
      toast(`${d.crow}, ${d.epithet}, hatched and joined the wire.`, "good");
      break;
    case "crow.retired":
      stage.removeCrow(d.crow);
      toast(`${d.crow} retired from the flock.`, "info");
      break;
    case "crow.quarantined":
      toast(`The Sentry caged ${d.crow}: ${d.evidence}`, "error");
      break;
    case "crow.reinstated":
      toast(`${d.crow} is out of the cage and back on the wire.`, "good");
      break;
    default:
      break;
  }
}

function showPrank(message, cooldown) {
  const banner = $("#prank-banner");
  banner.textContent = `${message}${cooldown ? ` (cooldown ${cooldown} s)` : ""}`;
  banner.hidden = false;
  clearTimeout(showPrank.timer);
  showPrank.timer = setTimeout(() => { banner.hidden = true; }, 9000);
}

function addNestOption(nestId, name) {
  const select = $("#list-nest");
  if ([...select.options].some((o) => o.value === nestId)) return;
  select.append(h("option", { value: nestId }, name && name !== nestId ? `${name} (#${nestId})` : nestId));
}

function setupComposer() {
  const form = $("#list-form");
  const text = $("#list-text");
  const requester = $("#list-requester");
  const error = $("#list-error");
  const button = $("#list-send");
  requester.value = localStorage.getItem("crows.requester") || OWNER;
  text.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    clearFormError(error);
    button.disabled = true;
    button.textContent = "Sending…";
    const body = { text: text.value, requester: requester.value.trim(), nest_id: $("#list-nest").value };
    try {
      const made = await post("/api/lists", body);
      localStorage.setItem("crows.requester", body.requester);
      text.value = "";
      toast(`List ${made && made.list_id ? made.list_id : ""} is with the flock. The Sentry is triaging.`, "good");
    } catch (err) {
      showFormError(error, err);
      if (err instanceof ApiError && err.status === 429) showPrank(err.message, err.body.cooldown_s);
    } finally {
      button.disabled = false;
      button.textContent = "Send to the flock";
    }
  });
}

// The first-run step (a fresh install): shown once per browser, until the owner picks.
const FIRST_RUN_KEY = "crows.first-run";
function setupFirstRun() {
  const box = $("#first-run");
  if (!ui.first_run || localStorage.getItem(FIRST_RUN_KEY)) return;
  box.hidden = false;
  $("#first-run-connect").addEventListener("click", () => localStorage.setItem(FIRST_RUN_KEY, "connect"));
  $("#first-run-offline").addEventListener("click", () => {
    localStorage.setItem(FIRST_RUN_KEY, "offline");
    box.hidden = true;
    $("#list-text").focus();
    toast("Offline it is: write a list, and the mock brain answers in the shape each task asks for.", "good");
  });
}

async function main() {
  setupFirstRun();
  setupComposer();
  startCountdowns();
  let state;
  try {
    state = await get("/api/state");
  } catch (err) {
    toast(`Could not read the flock's state: ${messageOf(err)}`, "error");
    state = { flock: [], capabilities: [], last_event_id: ui.since || 0 };
  }
  stage.setFlock(state.flock || []);
  board.load(state.open_decisions);
  chatDeliveries.load(state.pending_approvals);
  readDeadlines(state);
  get("/api/nests").then((data) => {
    for (const n of data.nests || []) addNestOption(n.nest_id, n.name);
  }).catch((err) => toast(`Could not list the nests: ${messageOf(err)}`, "error"));

  new Stream({
    since: ui.since ?? state.last_event_id,
    liveAfter: state.last_event_id ?? 0,
    names: state.capabilities || [],
    onReconnect: () => { refreshDeadlinesSoon(); refreshChatDeliveriesSoon(); },
    // Until the recent lists are read the page says so; "No lists yet" only when it knows.
    onReady: () => {
      const empty = $("#lists-empty");
      if (!empty) return;
      empty.dataset.state = "empty";
      empty.textContent = "No lists yet. Write one on the left: the Sentry triages each line, the crows fly it, and you approve until they earn your trust.";
    },
  }).onAny(onEvent).start();
}

main();
