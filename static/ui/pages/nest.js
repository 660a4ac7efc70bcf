// A nest (or a direct chat): the rooms on the left, the conversation, its budgets and the
// composer. Messages come from the nest's own event stream, which replays the room from
// its first message, then follows it live.

import { $, $$, h, uiConfig, fmtTokens, whenWords } from "../dom.js";
import { get, post, isMissingEndpoint } from "../api.js";
import { Stream, CROW_EVENTS } from "../stream.js";
import { crowAvatar } from "../crow_art.js";
import { messageEl, attachAnswer, markMock, MentionBox, taggedTitle, showRendered } from "../chat.js";
import { showFormError, clearFormError, toast, messageOf } from "../notify.js";
import { DecisionBoard, DeliveryApprovals } from "../decisions.js";
import { ExpectationsPanel, DebatesPanel, isOwnerSummary } from "../ledger.js";
import { ReviewQueue } from "../review.js";
import { setPageTitle } from "../waiting.js";
import { OWNER, HARNESS, SENTRY } from "../vocab.js";

const ui = uiConfig();
const config = ui.config || {};
const nestId = ui.nest_id;
const list = $("#messages");
const seen = new Map(); // msg_id -> record
let members = [];
let crows = [];
let roster = [];
let replyTo = null;
let currentNests = [];
let waitingCards = 0; // the room's waiting review cards (the review queue counts them)
let room = null;
const board = new DecisionBoard($("#decisions"), { nestId, onChange: () => drawCardsBar() });
const approvals = new DeliveryApprovals(nestId);
const expectations = new ExpectationsPanel($("#expectations"), nestId);
const debates = new DebatesPanel($("#debates"), nestId);
// The review queue's cards for this room (its lists' items and deliveries; its decisions
// have their own board above), kept local to this page.
new ReviewQueue($("#review-inline"), {
  nestId, skipDecisions: true,
  onCount: (n) => {
    $("#review-inline-panel").hidden = n === 0;
    $("#review-inline-n").textContent = String(n);
    waitingCards = n;
    drawCardsBar();
  },
});

// The cards bar: decisions and waiting cards folded into one line (how many, and the most
// urgent deadline), so the conversation and the composer keep the screen. It opens on a
// click, or Enter/Space on it, and stays as the owner left it while the tab lives.
const CARDS_OPEN_KEY = `crows:cards-open:${nestId}`;
function setCardsOpen(open) {
  $("#cards-body").hidden = !open;
  $("#cards-bar").setAttribute("aria-expanded", String(open));
  $("#cards-bar-toggle").textContent = open ? "Hide" : "Show";
  sessionStorage.setItem(CARDS_OPEN_KEY, open ? "1" : "");
}
function drawCardsBar() {
  const decisions = board.open.size;
  const total = decisions + waitingCards;
  $("#desk-cards").hidden = total === 0;
  if (!total) return;
  const words = [decisions ? `${decisions} decision${decisions === 1 ? "" : "s"}` : "",
    waitingCards ? `${waitingCards} waiting card${waitingCards === 1 ? "" : "s"}` : ""].filter(Boolean).join(" and ");
  $("#cards-bar-count").textContent = `${words} for you`;
  const deadlines = [...document.querySelectorAll("#cards-body [data-deadline]")].map((el) => Number(el.dataset.deadline)).filter(Number.isFinite);
  const soonest = deadlines.length ? Math.min(...deadlines) : null;
  $("#cards-bar-deadline").textContent = soonest ? `the most urgent fails safe ${whenWords(soonest)}` : "";
}
$("#cards-bar").addEventListener("click", () => setCardsOpen($("#cards-body").hidden));
setCardsOpen(sessionStorage.getItem(CARDS_OPEN_KEY) === "1");
setInterval(drawCardsBar, 30000);

// The chat fills the window on a phone too (the rooms and the ledger come after it): its
// height is the scrolling main's, measured, since a grid row cannot take it from CSS.
function fitChat() {
  const main = $("#main");
  const style = getComputedStyle(main);
  const inner = main.clientHeight - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom);
  document.documentElement.style.setProperty("--chat-h", `${Math.max(320, Math.floor(inner))}px`);
}
fitChat();
window.addEventListener("resize", fitChat);

// The crow messages the offline mock brain wrote, as the server read them when the page
// was made (nests/queries_review.py), up to message number `through`.
const mockIds = new Set((ui.mock && ui.mock.msg_ids) || []);
const mockThrough = (ui.mock && ui.mock.through) || 0;

/** A message's number in this room: `todo-12` is 12. */
const msgNumber = (msgId) => Number(msgId.slice(nestId.length + 1));

// A later crow message: its chat flight is logged under the message it answers, just
// before it is posted, so the crow's newest flight in this room about that message says
// which brain wrote it. A failed read leaves the message unbadged (the banner still says
// the default brain is the mock).
async function checkMock(msg, el) {
  if ([OWNER, HARNESS].includes(msg.author) || !msg.refers_to) return;
  if (msgNumber(msg.msg_id) <= mockThrough) return;
  let flights = [];
  try {
    flights = await get(`/api/flights?crow=${encodeURIComponent(msg.author)}&limit=10`);
  } catch {
    return;
  }
  const flight = flights.find((f) => f.task === "chat" && f.nest_id === nestId && f.msg_id === msg.refers_to);
  if (flight && flight.provider === "mock") markMock(el);
}

// Jev's probabilities for a message that arrived after the page was made: the page's own
// table (ui.kind_probs) was read before it; the tag log has them (GET /api/jev/tags). The
// harness's and the Sentry's messages are not Jev's to tag, so there is nothing to read.
async function fetchProbs(msg, el) {
  if ([HARNESS, SENTRY].includes(msg.author)) return;
  let tags = [];
  try {
    tags = await get(`/api/jev/tags?subject=${encodeURIComponent(msg.msg_id)}&question=kind&limit=1`);
  } catch {
    return;
  }
  if (!tags.length) return;
  const withProbs = { ...msg, probs: tags[0].probs };
  seen.set(msg.msg_id, withProbs);
  const tag = el.querySelector(".tagged");
  if (tag) {
    tag.title = taggedTitle(withProbs);
    tag.setAttribute("aria-label", tag.title);
  }
}

// The room's latest deliveries, rendered when the page was made (nests/queries_review.py);
// a later one is read from the messages page, which carries each delivery's `html`.
const deliveryHtml = ui.delivery_html || {};

async function fetchRendered(msg, el) {
  let page = null;
  try {
    page = await get(`/api/nests/${encodeURIComponent(nestId)}/messages?before=${msgNumber(msg.msg_id) + 1}&limit=1`);
  } catch {
    return; // the plain text stays
  }
  const found = (page.messages || []).find((m) => m.msg_id === msg.msg_id);
  if (found && found.html) showRendered(el, msg, found.html);
}

/** Whether rendering `text` as Markdown would change how it reads. */
function looksMarked(text) {
  return /https?:\/\/|[*_`~#>|]|^\s*([-+]|\d+[.)])\s|\[[^\]]*\]\(/m.test(text || "");
}

function nearBottom() {
  return list.scrollHeight - list.scrollTop - list.clientHeight < 120;
}

function addMessage(msg, { live = false } = {}) {
  if (seen.has(msg.msg_id)) return;
  const probs = ui.kind_probs && ui.kind_probs[msg.msg_id];
  if (probs && !msg.probs) msg = { ...msg, probs };
  if (mockIds.has(msg.msg_id)) msg = { ...msg, mock: true };
  if (deliveryHtml[msg.msg_id]) msg = { ...msg, html: deliveryHtml[msg.msg_id] };
  seen.set(msg.msg_id, msg);
  // The room's history (replayed at load) always lands at its newest message; a live one
  // follows only an owner who is reading the bottom of the room.
  const stick = !live || nearBottom();
  list.querySelector(".empty")?.remove();
  const el = messageEl(msg, { members, onReply: setReply });
  if (!msg.mock) checkMock(msg, el);
  if (live && msg.tagged_by && !msg.probs) fetchProbs(msg, el);
  // One made after the page (older ones past the rendered window stay plain text).
  if (msg.kind === "deliver" && !msg.html && (live || msgNumber(msg.msg_id) > mockThrough)) {
    fetchRendered(msg, el);
  }
  // The owner's own words render as Markdown too, with bare links made links (the same
  // server renderer): read when they hold anything Markdown or a URL would change.
  if (msg.author === OWNER && !msg.html && looksMarked(msg.text) && (live || msgNumber(msg.msg_id) > mockThrough)) {
    fetchRendered(msg, el);
  }
  // The harness's summary of open expectations is addressed to you: it stands out.
  if (isOwnerSummary(msg)) el.classList.add("owner-summary");
  list.append(el);
  if (msg.refers_to && ["claim", "deliver", "decline"].includes(msg.kind)) {
    const request = document.getElementById(`msg-${msg.refers_to}`);
    if (request) attachAnswer(request, msg);
  }
  approvals.drawn(msg.msg_id);
  if (stick) list.scrollTo({ top: list.scrollHeight, behavior: live ? "smooth" : "instant" });
}

function setReply(msg) {
  replyTo = msg ? msg.msg_id : null;
  const chip = $("#reply-chip");
  chip.hidden = !msg;
  if (msg) {
    chip.replaceChildren(`Replying to ${msg.msg_id} (${msg.author === OWNER ? "you" : msg.author}) `,
      h("button", { type: "button", class: "chip-close", "aria-label": "Stop replying", onclick: () => setReply(null) }, "×"));
    $("#composer-text").focus();
  }
}

function membersOf() {
  if (room && Array.isArray(room.members)) return room.members.filter((m) => m !== OWNER);
  if (nestId === "todo") return crows.map((c) => c.name);
  if (nestId.startsWith("dm-")) {
    const crow = crows.find((c) => `dm-${c.name.toLowerCase()}` === nestId);
    return crow ? [crow.name] : [];
  }
  const core = (room && (room.crows || room.core)) || [];
  const everywhere = crows.filter((c) => ["assistant", "chief_of_staff"].includes(c.role)).map((c) => c.name);
  return [...core, ...everywhere.filter((n) => !core.includes(n))];
}

function drawHeader(nests) {
  const listed = nests.find((n) => n.nest_id === nestId);
  const dmCrow = nestId.startsWith("dm-") ? crows.find((c) => `dm-${c.name.toLowerCase()}` === nestId) : null;
  const title = dmCrow ? `${dmCrow.name}, ${dmCrow.epithet}` : listed ? listed.name : (room && room.name) || nestId;
  $("#chat-title").textContent = nestId === "todo" ? "todo · the open flock" : title;
  setPageTitle(`${title} · so-many-crows`);
  members = membersOf();
  $("#chat-members").replaceChildren(
    h("span", { class: "muted" }, nestId.startsWith("dm-") ? "Just you and " : "Members: "),
    ...members.map((m) => h("a", { class: "member", href: `/crows/${encodeURIComponent(m)}` }, crowAvatar(m, 18), m,
      isCaged(m) ? h("span", { class: "tiny-badge warn", dataset: { mark: "caged" } }, "caged") : null)));
}

function isCaged(name) {
  const crow = crows.find((c) => c.name === name);
  return Boolean(crow && crow.status === "quarantined");
}

// The composer suggests only crows that can answer: never a caged or retired one (GET
// /api/crows lists no retired crow, so one missing from it is not suggested either).
function suggestable() {
  if (!crows.length) return members;
  return members.filter((name) => crows.some((c) => c.name === name && c.status === "active"));
}

// The crows one can talk to: the Sentry and the Elder never chat (docs/CHATROOM.md), so
// they get no direct chat in the lists.
function chatty() {
  return crows.filter((c) => !["sentry", "elder"].includes(c.role));
}

function drawRooms(nests) {
  const here = (id) => (id === nestId ? "page" : null);
  // Phone width: the room list sits below the chat, so the header offers a quick switch.
  const switcher = $("#room-switch");
  switcher.replaceChildren(
    h("optgroup", { label: "Nests" }, nests.map((n) => h("option", { value: n.nest_id, selected: n.nest_id === nestId }, n.nest_id === "todo" ? "#todo" : `#${n.name}`))),
    h("optgroup", { label: "Direct chats" }, chatty().map((c) => {
      const id = `dm-${c.name.toLowerCase()}`;
      return h("option", { value: id, selected: id === nestId }, c.name);
    })));
  switcher.onchange = () => window.location.assign(`/nests/${encodeURIComponent(switcher.value)}`);
  $("#nest-rooms").replaceChildren(...nests.map((n) => h("li", {},
    h("a", { href: `/nests/${encodeURIComponent(n.nest_id)}`, "aria-current": here(n.nest_id) },
      h("span", { class: "room-hash" }, "#"), n.nest_id === "todo" ? "todo" : n.name,
      n.crows && n.crows.length ? h("span", { class: "room-count muted" }, n.crows.length) : null))));
  $("#dm-rooms").replaceChildren(...chatty().map((c) => {
    const id = `dm-${c.name.toLowerCase()}`;
    return h("li", {}, h("a", { href: `/nests/${id}`, "aria-current": here(id) },
      crowAvatar(c.name, 20), c.name, c.status === "quarantined" ? h("span", { class: "tiny-badge warn" }, "caged") : null));
  }));
  $("#nest-crows").replaceChildren(...roster.map((name) => h("label", { class: "crow-pick" },
    h("input", { type: "checkbox", name: "crows", value: name }), crowAvatar(name, 22), h("span", {}, name))));
}

function meter(el, left, total, unit) {
  const value = el.querySelector(".meter-value");
  const bar = el.querySelector(".bar > span");
  if (left === undefined || left === null) {
    value.textContent = "not reported";
    bar.style.width = "0%";
    el.classList.add("unknown");
    return;
  }
  el.classList.remove("unknown");
  value.textContent = total ? `${fmtTokens(left)} of ${fmtTokens(total)}${unit}` : `${fmtTokens(left)}${unit}`;
  const pct = total ? Math.max(0, Math.min(100, (left / total) * 100)) : 100;
  bar.style.width = `${pct}%`;
  el.classList.toggle("low", pct < 20);
}

function drawBudgets() {
  // GET /api/nests/{id} "budget": exchanges granted by the owner's last message and tokens
  // per day (plus top-ups), each with what is left (docs/CHATROOM.md).
  const b = (room && room.budget) || {};
  const exTotal = b.exchanges_granted || b.exchanges_per_turn || config.exchanges_per_turn;
  const tokTotal = (b.tokens_per_day ?? config.nest_token_budget) + (b.tokens_topped_up || 0);
  if (room && room.budget && !b.exchanges_granted && !b.exchanges_left) {
    // No owner message yet (or the turn is spent): each owner message grants a new turn.
    const el = $("#meter-exchanges");
    meter(el, 0, exTotal, "");
    el.querySelector(".meter-value").textContent = b.turn ? `0 · ${exTotal} more when you speak` : `${exTotal} when you speak`;
  } else {
    meter($("#meter-exchanges"), b.exchanges_left, exTotal, "");
  }
  meter($("#meter-tokens"), b.tokens_left_today, tokTotal, "");
}

// A crow's delivery may open an approval (no event says so): read the pending ones again.
let pendingTimer = null;
function refreshPendingSoon() {
  clearTimeout(pendingTimer);
  pendingTimer = setTimeout(async () => {
    try {
      approvals.load((await get("/api/state")).pending_approvals);
    } catch (err) {
      toast(`Could not read the approvals waiting for you: ${messageOf(err)}`, "error");
    }
  }, 300);
}

let roomTimer = null;
// Boss hatches and retires crows and makes nests, and says so in the room: after Boss
// speaks, the direct chats, the nests and the members are read again (the room's stream
// does not carry the flock's crow.hatched).
let flockTimer = null;
function refreshFlockSoon(redraw) {
  clearTimeout(flockTimer);
  flockTimer = setTimeout(async () => {
    try {
      const [c, n] = await Promise.all([get("/api/crows"), get("/api/nests")]);
      crows = c;
      roster = n.roster || [];
      redraw(n.nests || []);
    } catch {
      // The next message from Boss, or a reload, reads them again.
    }
  }, 400);
}

function refreshRoomSoon() {
  clearTimeout(roomTimer);
  roomTimer = setTimeout(loadRoom, 400);
}

async function loadRoom() {
  try {
    room = await get(`/api/nests/${encodeURIComponent(nestId)}`);
  } catch (err) {
    if (!isMissingEndpoint(err) && err.status !== 405) toast(`Could not read this room: ${messageOf(err)}`, "error");
    room = room || null;
  }
  drawBudgets();
}

function setupComposer() {
  const form = $("#composer");
  const ta = $("#composer-text");
  const error = $("#composer-error");
  // Near the limit the composer counts, so a long message is not refused only on Send.
  const counter = $("#composer-count");
  const max = config.message_text_max || 2000;
  ta.addEventListener("input", () => {
    const used = ta.value.trim().length;
    counter.hidden = used < max * 0.9;
    counter.textContent = used > max ? `${used} of ${max} characters: ${used - max} too many` : `${used} of ${max} characters`;
    counter.classList.toggle("over", used > max);
  });
  const mentions = new MentionBox(ta, $("#mention-list"), suggestable);
  ta.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !mentions.open && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    clearFormError(error);
    const body = { author: OWNER, text: ta.value };
    if (replyTo) body.refers_to = replyTo;
    const button = $("#composer-send");
    button.disabled = true;
    button.textContent = "Sending…";
    try {
      const msg = await post(`/api/nests/${encodeURIComponent(nestId)}/messages`, body);
      ta.value = "";
      setReply(null);
      if (msg && msg.msg_id) addMessage(msg, { live: true });
      list.scrollTop = list.scrollHeight;
    } catch (err) {
      showFormError(error, err);
    } finally {
      button.disabled = false;
      button.textContent = "Send";
      ta.focus();
    }
  });
}

function setupNestForm() {
  const form = $("#nest-form");
  const error = $("#nest-error");
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    clearFormError(error);
    const picked = $$("input[name=crows]:checked", form).map((i) => i.value);
    try {
      const nest = await post("/api/nests", { name: $("#nest-name").value, crows: picked });
      window.location.assign(`/nests/${encodeURIComponent(nest.nest_id)}`);
    } catch (err) {
      showFormError(error, err);
    }
  });
}

function crowChanged(event) {
  const d = event.data;
  const c = crows.find((x) => x.name === d.crow);
  if (c && event.name === "crow.quarantined") c.status = "quarantined";
  if (c && event.name === "crow.reinstated") c.status = "active";
  if (event.name === "crow.retired") crows = crows.filter((x) => x.name !== d.crow);
  drawRooms(currentNests);
  drawHeader(currentNests);
  expectations.reload.soon();
  refreshFlockSoon((fresh) => { currentNests = fresh; drawRooms(currentNests); drawHeader(currentNests); });
  if (event.name === "crow.quarantined") toast(`${d.crow} is quarantined by the Sentry.`, "error");
  else if (event.name === "crow.reinstated") toast(`${d.crow} is reinstated.`, "good");
  else if (event.name === "crow.retired") toast(`${d.crow} retired from the flock.`, "info");
}

function jumpTo(msgId) {
  const el = document.getElementById(`msg-${msgId}`);
  if (!el) return;
  el.scrollIntoView({ block: "center", behavior: matchMedia("(prefers-reduced-motion: reduce)").matches ? "auto" : "smooth" });
  el.classList.remove("highlight");
  void el.offsetWidth;
  el.classList.add("highlight");
}

async function main() {
  setupComposer();
  setupNestForm();
  // Until the room's history is read the page says so; "No messages yet" only when it knows.
  list.append(h("li", { class: "empty", dataset: { state: "loading" } }, "Reading the conversation…"));
  list.addEventListener("click", (e) => {
    const ref = e.target.closest("[data-ref]");
    if (!ref) return;
    e.preventDefault();
    jumpTo(ref.dataset.ref);
  });
  let state = { capabilities: [], last_event_id: 0 };
  try {
    const [s, c, n] = await Promise.all([get("/api/state"), get("/api/crows"), get("/api/nests")]);
    state = s;
    crows = c;
    currentNests = n.nests || [];
    roster = n.roster || [];
  } catch (err) {
    toast(`Could not read the flock: ${messageOf(err)}`, "error");
  }
  await loadRoom();
  expectations.load();
  debates.load();
  board.load(state.open_decisions);
  approvals.load(state.pending_approvals);
  drawRooms(currentNests);
  drawHeader(currentNests);
  new Stream({
    params: { nest_id: nestId }, liveAfter: state.last_event_id ?? 0, names: state.capabilities || [],
    onReconnect: () => { refreshRoomSoon(); refreshPendingSoon(); },
    onReady: () => {
      const empty = list.querySelector(".empty");
      if (!empty) return;
      empty.dataset.state = "empty";
      empty.textContent = "No messages yet. Say hello, or ask a crow for something with @.";
    },
  })
    .on("nest.message", (event) => {
      addMessage(event.data, { live: event.live });
      if (event.live) refreshRoomSoon();
      // The ledger's own events are on the firehose; every nudge, summary, claim or
      // delivery that moves it is a message of this room, so read it again then.
      if (event.live) { expectations.reload.soon(); debates.reload.soon(); }
      if (event.live && event.data.kind === "deliver") refreshPendingSoon();
      if (event.live && crows.some((c) => c.name === event.data.author && c.role === "chief_of_staff")) {
        refreshFlockSoon((fresh) => { currentNests = fresh; drawRooms(currentNests); drawHeader(currentNests); });
      }
    })
    .on("verdict", (event) => approvals.verdict(event.data))
    .on("verdict.overruled", (event) => approvals.overruled(event.data))
    .onAny((event) => {
      board.apply(event);
      expectations.apply(event);
      debates.apply(event);
      // A crow caged, freed, retired, hatched or changed anywhere: every open nest page
      // hears it (the shared stream gives every page the crow events) and draws the rooms,
      // the members line and the expectations again. GET /api/crows, read when the page
      // was made, already says where each crow stood, so a replayed one changes nothing.
      if (event.live && CROW_EVENTS.includes(event.name)) crowChanged(event);
      if (event.name.startsWith("decision") || event.name.startsWith("nest.budget")) refreshRoomSoon();
    })
    .start();
}

main();
