// The flock on its wire: one perch per crow, and one small state machine per crow that
// only ever changes through the inputs rive_inputs.js derives from events.
//
//   perched --crow.flying--> flying --crow.landed(ok)--> perched
//                                   --crow.landed(!ok)--> tumbling --> perched (dazed)
//   any --crow.quarantined=true--> caged (drawn over whatever it is doing)
//   crow.banter and requester.pranked are overlays: a bubble, a prank, then back.
//
// Events replayed from before the page opened set the state without the show (no
// tumble, no bubble), so a crow still out on a flight is drawn flying, but old banter is
// not spoken again.

import { h, $ } from "./dom.js";
import { crowSvg, accentOf } from "./crow_art.js";
import { INPUTS } from "./rive_inputs.js";
import { announce } from "./notify.js";

const BUBBLE_MS = 7000;
const PRANK_MS = 2600;
const TUMBLE_MS = 1300;
const DAZED_MS = 3500;

export class CrowMachine {
  constructor(crow, el) {
    this.name = crow.name;
    this.el = el;
    this.state = "perched";
    this.flights = new Map(); // item_id -> open flights
    this.values = { ok: true, "crow.quarantined": crow.status === "quarantined" };
    this.timers = {};
    this.render();
  }

  /** Apply one input. `live` is false for events replayed from before the page opened. */
  input(name, value, ctx = {}) {
    const kind = INPUTS[name];
    if (!kind) return;
    if (kind === "boolean") {
      this.values[name] = Boolean(value);
      if (name === "crow.quarantined") this.render();
      return;
    }
    switch (name) {
      case "crow.flying": {
        const key = ctx.item_id || "?";
        this.flights.set(key, (this.flights.get(key) || 0) + 1);
        this.go("flying");
        break;
      }
      case "crow.landed": {
        const key = ctx.item_id || "?";
        const left = (this.flights.get(key) || 1) - 1;
        if (left > 0) this.flights.set(key, left);
        else this.flights.delete(key);
        if (this.flights.size > 0) break;
        if (this.values.ok || !ctx.live) this.go("perched", { landing: ctx.live });
        else this.tumble();
        break;
      }
      case "crow.banter":
        if (ctx.live) this.bubble(ctx.text, ctx.to);
        break;
      case "requester.pranked":
        if (ctx.live) this.prank();
        break;
      default:
        break;
    }
  }

  go(state, { landing = false } = {}) {
    this.state = state;
    clearTimeout(this.timers.tumble);
    this.flash(landing ? "is-landing" : "", 700);
    this.render();
  }

  tumble() {
    this.state = "tumbling";
    this.render();
    clearTimeout(this.timers.tumble);
    this.timers.tumble = setTimeout(() => {
      this.state = "perched";
      this.flash("is-dazed", DAZED_MS);
      this.render();
    }, TUMBLE_MS);
  }

  hush() {
    clearTimeout(this.timers.bubble);
    $(".bubble", this.el).hidden = true;
    $(".bubble-tail", this.el).hidden = true;
    this.el.classList.remove("is-speaking");
  }

  bubble(text, to) {
    if (!text) return;
    const bubble = $(".bubble", this.el);
    const tail = $(".bubble-tail", this.el);
    bubble.replaceChildren(h("span", { class: "bubble-text" },
      to && !text.startsWith(`@${to}`) ? h("span", { class: "bubble-to" }, `@${to} `) : "", text));
    bubble.hidden = false;
    tail.hidden = false;
    this.keepInside(bubble);
    this.el.classList.add("is-speaking");
    announce(`${this.name}${to ? ` to ${to}` : ""}: ${text}`);
    clearTimeout(this.timers.bubble);
    this.timers.bubble = setTimeout(() => {
      bubble.hidden = true;
      tail.hidden = true;
      this.el.classList.remove("is-speaking");
    }, BUBBLE_MS);
  }

  keepInside(bubble) {
    const stage = this.el.closest(".stage") || document.body;
    bubble.style.setProperty("--shift", "0px");
    const box = stage.getBoundingClientRect();
    const perch = this.el.getBoundingClientRect();
    // Layout sizes, not the bounding box: the bubble may be mid pop-in (scaled down).
    const centre = perch.left + perch.width / 2;
    const half = bubble.offsetWidth / 2;
    const margin = 8;
    let shift = 0;
    if (centre - half < box.left + margin) shift = box.left + margin - (centre - half);
    else if (centre + half > box.right - margin) shift = box.right - margin - (centre + half);
    bubble.style.setProperty("--shift", `${Math.round(shift)}px`);
  }

  prank() {
    if (this.values["crow.quarantined"]) return;
    this.el.style.setProperty("--prank-delay", `${Math.round(Math.random() * 300)}ms`);
    this.flash("is-pranking", PRANK_MS);
  }

  flash(cls, ms) {
    if (!cls) return;
    this.el.classList.remove(cls);
    // Restart the animation when the same flash comes twice.
    void this.el.offsetWidth;
    this.el.classList.add(cls);
    clearTimeout(this.timers[cls]);
    this.timers[cls] = setTimeout(() => this.el.classList.remove(cls), ms);
  }

  render() {
    const caged = this.values["crow.quarantined"];
    this.el.classList.toggle("is-flying", this.state === "flying");
    this.el.classList.toggle("is-tumbling", this.state === "tumbling");
    this.el.classList.toggle("is-caged", caged);
    this.el.dataset.state = caged ? "caged" : this.state;
    const items = [...this.flights.keys()].filter((k) => k !== "?");
    const tag = $(".flight-tag", this.el);
    tag.textContent = items.length ? `→ ${items.map(shortItem).join(" ")}` : "";
    const status = $(".perch-status", this.el);
    status.textContent = caged ? "quarantined"
      : this.state === "flying" ? `flying${items.length ? ` ${items.map(shortItem).join(" ")}` : ""}`
      : this.state === "tumbling" ? "tumbled" : "";
  }
}

function shortItem(itemId) {
  // Item ids are "<list_id>-<n>"; on the wire the item's number is enough.
  const n = String(itemId).split("-").at(-1);
  return /^\d+$/.test(n) ? `#${n}` : String(itemId);
}

export class FlockStage {
  constructor(wire, { summary } = {}) {
    this.wire = wire;
    this.summary = summary;
    this.machines = new Map();
  }

  setFlock(crows) {
    this.wire.replaceChildren();
    this.machines.clear();
    for (const crow of crows) this.addCrow(crow);
    this.updateSummary();
  }

  addCrow(crow) {
    if (this.machines.has(crow.name)) return;
    const el = h("li", { class: "perch", dataset: { crow: crow.name }, style: { "--accent": accentOf(crow.name) } },
      h("div", { class: "bubble", role: "presentation", hidden: true }),
      h("div", { class: "bubble-tail", "aria-hidden": "true", hidden: true }),
      h("a", { class: "perch-link", href: `/crows/${encodeURIComponent(crow.name)}`,
        "aria-label": `${crow.name}, ${crow.epithet || ""}` },
        h("span", { class: "crow-wrap" }, h("span", { class: "flight-tag", "aria-hidden": "true" }), crowSvg(crow.name, { title: false }), cage()),
        h("span", { class: "perch-wire", "aria-hidden": "true" }),
        h("span", { class: "perch-name" }, crow.name),
        h("span", { class: "perch-epithet" }, crow.epithet || ""),
        h("span", { class: "perch-status" })));
    this.wire.append(el);
    this.machines.set(crow.name, new CrowMachine(crow, el));
  }

  removeCrow(name) {
    const machine = this.machines.get(name);
    if (!machine) return;
    machine.el.remove();
    this.machines.delete(name);
    this.updateSummary();
  }

  /** Apply the inputs of one event (from rive_inputs.inputsFor). */
  apply(inputs, { live = true } = {}) {
    for (const input of inputs) {
      // One speaker at a time: a new line of banter hushes the last one.
      if (input.input === "crow.banter" && live) for (const m of this.machines.values()) m.hush();
      const targets = input.crow === "*" ? [...this.machines.values()] : [this.machines.get(input.crow)];
      for (const machine of targets) {
        if (machine) machine.input(input.input, input.value, { ...input, live });
      }
    }
    if (inputs.length) this.updateSummary();
  }

  updateSummary() {
    if (!this.summary) return;
    const all = [...this.machines.values()];
    const caged = all.filter((m) => m.values["crow.quarantined"]).length;
    const aloft = all.filter((m) => m.state === "flying").length;
    const perched = all.length - caged - aloft;
    const parts = [];
    if (aloft) parts.push(`${aloft} aloft`);
    parts.push(`${perched} on the wire`);
    if (caged) parts.push(`${caged} caged`);
    this.summary.textContent = `${all.length} crows: ${parts.join(" · ")}.`;
  }
}

function cage() {
  const bars = [];
  for (let x = 14; x <= 106; x += 11) bars.push(`M${x} 96 L${x} 26`);
  const el = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  el.setAttribute("class", "cage");
  el.setAttribute("viewBox", "0 0 120 100");
  el.setAttribute("aria-hidden", "true");
  el.innerHTML = `<path d="M10 28 Q60 -8 110 28" fill="none" stroke="#c9b27c" stroke-width="3"/>`
    + `<path d="${bars.join(" ")}" stroke="#c9b27c" stroke-width="2.2"/>`
    + `<path d="M8 96 L112 96" stroke="#c9b27c" stroke-width="4" stroke-linecap="round"/>`
    + `<circle cx="60" cy="10" r="4" fill="none" stroke="#c9b27c" stroke-width="2"/>`;
  return el;
}
