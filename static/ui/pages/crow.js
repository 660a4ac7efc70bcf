// A crow's page: who it is, its trust per task type with each level's history, its recent
// flights and whether it is caged. The page arrives with the crow's flights and trust
// history; trust changes, flights and quarantine then arrive live from the event stream.

import { ask } from "../dialog.js";
import { $, h, uiConfig, fmtTokens, fmtTime } from "../dom.js";
import { get, post, isMissingEndpoint } from "../api.js";
import { Stream } from "../stream.js";
import { crowSvg } from "../crow_art.js";
import { levelSteps } from "../charts.js";
import { readLedger, historyPoints, LEVEL_WORDS, TASK_TYPES } from "../trustdata.js";
import { toast, messageOf } from "../notify.js";
import { drawMemory, drawOrchestration } from "../ledger.js";
import { DecisionBoard, BREACH_WORDS } from "../decisions.js";

const ui = uiConfig();
const name = ui.crow;
const flights = [...(ui.flights || [])];
const history = (ui.trust_history || []).map((c) => ({
  holder: name, task_type: c.task_type, from: Number(c.from ?? 0), to: Number(c.to ?? 0), t: Date.parse(c.at),
}));
const MAX_FLIGHTS = 15;
let crow = null;
const breaches = [...(ui.breaches || [])];
const board = new DecisionBoard($("#decisions"));

function drawBreaches() {
  const box = $("#crow-breaches");
  if (!breaches.length) {
    box.replaceChildren(h("p", { class: "muted" }, `No breaches: the Sentry has never flagged ${name}.`));
    return;
  }
  box.replaceChildren(h("ol", { class: "breach-log" }, breaches.map((b) => h("li", {},
    h("span", { class: "chip breach-chip" }, BREACH_WORDS[b.kind] || b.kind),
    ` score ${Number(b.score).toFixed(2)} `,
    b.nest_id && b.msg_id ? h("a", { href: `/nests/${encodeURIComponent(b.nest_id)}#msg-${b.msg_id}` }, b.msg_id) : null,
    b.flagged ? "" : h("span", { class: "muted" }, " (logged, not flagged again)"),
    b.at ? h("time", { class: "muted", datetime: b.at }, ` ${fmtTime(b.at)}`) : null,
    h("p", { class: "breach-evidence" }, b.evidence)))));
}

function cageSvg() {
  const el = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  el.setAttribute("class", "cage");
  el.setAttribute("viewBox", "0 0 120 100");
  el.setAttribute("aria-hidden", "true");
  const bars = [];
  for (let x = 14; x <= 106; x += 11) bars.push(`M${x} 96 L${x} 26`);
  el.innerHTML = `<path d="M10 28 Q60 -8 110 28" fill="none" stroke="#c9b27c" stroke-width="3"/><path d="${bars.join(" ")}" stroke="#c9b27c" stroke-width="2.2"/><path d="M8 96 L112 96" stroke="#c9b27c" stroke-width="4"/>`;
  return el;
}

function drawHero() {
  const caged = crow && crow.status === "quarantined";
  $("#crow-portrait").replaceChildren(crowSvg(name, { title: false }), caged ? cageSvg() : "");
  $("#crow-portrait").classList.toggle("is-caged", Boolean(caged));
  if (!crow) return;
  $("#crow-epithet").textContent = crow.epithet;
  $("#crow-strength").textContent = crow.strength ? `Strength: ${crow.strength}` : "";
  $("#crow-backstory").textContent = crow.backstory || "";
  const role = { assistant: "assistant (your point of contact)", chief_of_staff: "chief of staff", sentry: "sentry", elder: "elder", worker: "worker" }[crow.role] || crow.role;
  // Caged with no decision open (kept quarantined, or the decision timed out): the owner's
  // own later yes is this button; while a decision is open, its card above answers it.
  const release = caged && board.open.size === 0
    ? h("button", { type: "button", class: "btn approve small", id: "crow-reinstate", onclick: reinstate }, `Reinstate ${name}`)
    : null;
  $("#crow-chips").replaceChildren(
    h("span", { class: `chip status-${crow.status}` }, caged ? (release ? "quarantined: kept caged" : "quarantined: caged until you decide")
      : crow.status === "retired" ? "retired: it has left the flock; its history stays" : crow.status),
    h("span", { class: "chip" }, role),
    crow.model ? h("span", { class: "chip", title: "The brain that runs this crow" }, crow.model) : null,
    ...(crow.task_types || []).map((t) => h("span", { class: "chip" }, t)),
    release);
  $("#crow-dm").href = `/nests/dm-${name.toLowerCase()}`;
  $("#crow-dm").textContent = `Chat with ${name} directly`;
  // A retired crow has no room to talk in; the Sentry and the Elder do not chat (docs/CHATROOM.md).
  $("#crow-dm").hidden = crow.status === "retired" || crow.role === "sentry" || crow.role === "elder";
}

async function reinstate(event) {
  const button = event.currentTarget;
  const sure = await ask({
    title: `Reinstate ${name}?`, message: `${name} may post and be invoked again at once.`,
    confirm: `Reinstate ${name}`, cancel: `Keep ${name} caged`,
  });
  if (!sure) return;
  button.disabled = true;
  try {
    crow = await post(`/api/crows/${encodeURIComponent(name)}/reinstate`);
    toast(`${name} is reinstated.`, "good");
    drawHero();
  } catch (err) {
    button.disabled = false;
    toast(messageOf(err), "error");
  }
}

async function drawTrust() {
  const box = $("#crow-trust");
  let ledger;
  try {
    ledger = readLedger(await get("/api/trust"));
  } catch (err) {
    box.replaceChildren(h("p", { class: "muted" }, isMissingEndpoint(err)
      ? "This build does not serve the trust ledger (GET /api/trust)."
      : `Could not read the ledger: ${messageOf(err)}`));
    return;
  }
  const mine = ledger.rows.filter((r) => r.holder === name);
  const types = [...new Set([...(crow ? crow.task_types || [] : []), ...ledger.taskTypes, ...TASK_TYPES])];
  box.replaceChildren(h("table", {},
    h("caption", { class: "sr-only" }, `${name}'s trust level per task type`),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Task type"), h("th", { scope: "col" }, "Level"),
      h("th", { scope: "col", class: "num" }, "✓ / ✕"), h("th", { scope: "col" }, "History"))),
    h("tbody", {}, types.map((t) => {
      const row = mine.find((r) => r.task_type === t);
      const level = row ? row.level : 0;
      const points = historyPoints(history, name, t);
      return h("tr", {},
        h("th", { scope: "row" }, t),
        h("td", {}, h("span", { class: `level level-${level}` }, LEVEL_WORDS[level] ?? level,
          row && row.streak ? h("span", { class: "streak", title: "owner approvals in a row since the last change" }, ` · ${row.streak} in a row`) : null)),
        h("td", { class: "num", title: "owner approvals / rejections" }, row ? `${row.approvals ?? 0} / ${row.rejections ?? 0}` : "0 / 0"),
        h("td", {}, points.length ? levelSteps(points, { width: 120, height: 30 }) : h("span", { class: "muted" }, "no verdicts yet")));
    }))));
}

function drawFlights() {
  const box = $("#crow-flights");
  if (!flights.length) {
    box.replaceChildren(h("p", { class: "muted" }, `${name} has not flown yet.`));
    return;
  }
  box.replaceChildren(h("ul", { class: "flights" }, flights.slice(0, MAX_FLIGHTS).map((f) => {
    const where = f.item_id
      ? h("a", { href: `/lists/${encodeURIComponent(f.list_id || f.item_id.split("-").slice(0, -1).join("-"))}` }, f.item_id)
      : f.nest_id ? h("a", { href: `/nests/${encodeURIComponent(f.nest_id)}${f.msg_id ? `#msg-${f.msg_id}` : ""}` }, f.msg_id || `#${f.nest_id}`) : null;
    return h("li", {},
      // An image with a name: a bare span may not carry aria-label (axe: aria-prohibited-attr).
      h("span", { class: f.ok === false ? "fail-dot" : f.ok === null ? "fly-dot" : "ok-dot", role: "img", "aria-label": f.ok === false ? "failed" : f.ok === null ? "in flight" : "ok" }),
      h("span", {}, h("strong", {}, f.task || "flight"), f.task_type ? ` · ${f.task_type}` : "", where ? " · " : "", where,
        f.error ? h("span", { class: "muted" }, ` — ${f.error}`) : ""),
      h("span", { class: "muted" }, f.ok === null ? "flying…" : `${fmtTokens(f.tokens || 0)} tok${f.at ? ` · ${fmtTime(f.at)}` : ""}`));
  })));
}

function onEvent(event) {
  const d = event.data;
  if (event.name === "orchestration.decided" && (d.crow === name || d.decider === name)) {
    drawOrchestration($("#crow-orchestration"), name);
    return;
  }
  if (event.name === "nest.message" && (d.author === name || d.to === name)) {
    drawMemory($("#crow-memory"), name);
    return;
  }
  if (d.crow !== name && d.holder !== name) return;
  board.apply(event);
  switch (event.name) {
    case "crow.flying":
      flights.unshift({ task: "flight", item_id: d.item_id, list_id: d.list_id, ok: null, at: d.ts });
      drawFlights();
      break;
    case "crow.landed": {
      const open = flights.find((f) => f.ok === null && f.item_id === d.item_id);
      const landed = { task: "flight", item_id: d.item_id, list_id: d.list_id, ok: Boolean(d.ok), tokens: d.tokens, error: d.error || "", at: d.ts };
      if (open) Object.assign(open, landed);
      else flights.unshift(landed);
      drawFlights();
      break;
    }
    case "trust.changed":
      history.push({ holder: name, task_type: d.task_type, from: d.from, to: d.to, t: Date.parse(d.ts) });
      drawTrust();
      break;
    case "crow.quarantined":
      breaches.unshift({ kind: d.breach, score: d.score, evidence: d.evidence, nest_id: d.nest_id, msg_id: d.msg_id, flagged: true, at: d.ts });
      drawBreaches();
      if (crow) crow.status = "quarantined";
      drawHero();
      break;
    case "decision.opened":
    case "decision.closed":
      if (d.crow === name) {
        board.apply(event);
        drawHero();
      }
      break;
    case "crow.reinstated":
    case "crow.retired":
      if (crow) crow.status = event.name === "crow.quarantined" ? "quarantined" : event.name === "crow.retired" ? "retired" : "active";
      drawHero();
      break;
    default:
      break;
  }
}

async function main() {
  let state = { capabilities: [], last_event_id: 0 };
  try {
    const [s, crows] = await Promise.all([get("/api/state"), get("/api/crows")]);
    state = s;
    crow = crows.find((c) => c.name === name) || ui.retired || null;
  } catch (err) {
    toast(`Could not read the flock: ${messageOf(err)}`, "error");
  }
  // The open decision first: the hero offers Reinstate only when none is open.
  board.load((state.open_decisions || []).filter((dec) => dec.crow === name));
  drawHero();
  drawFlights();
  drawBreaches();
  await drawTrust();
  drawMemory($("#crow-memory"), name);
  drawOrchestration($("#crow-orchestration"), name);
  new Stream({ since: state.last_event_id ?? 0, liveAfter: state.last_event_id ?? 0, names: state.capabilities || [] })
    .onAny(onEvent)
    .start();
}

main();
