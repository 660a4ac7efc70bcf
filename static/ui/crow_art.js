// Drawing a crow in SVG: an ink silhouette facing right, perched on a wire, with its own
// accent colour and one small thing that tells it apart. Both wing poses are drawn; CSS on
// the perch chooses which shows (folded on the wire, raised in flight).

import { svg } from "./dom.js";
import { OWNER, HARNESS } from "./vocab.js";

const LOOKS = {
  Quill: { accent: "#f3e9d2", extra: "quill" },
  Boss: { accent: "#f4a261", extra: "cap" },
  Hugin: { accent: "#6ec6ff", extra: "scarf" },
  Munin: { accent: "#d9b44a", extra: "spectacles" },
  Pepper: { accent: "#ef476f", extra: "crest" },
  Inky: { accent: "#e63946", extra: "redbeak" },
  Soot: { accent: "#a594f9", extra: "tophat" },
  Rook: { accent: "#2ec4b6", extra: "goggles" },
  Sentry: { accent: "#ffd166", extra: "helmet" },
  Elder: { accent: "#c7c3d6", extra: "grey" },
};

const HATCHED = ["#90e0ef", "#f7b267", "#b5e48c", "#ff99c8", "#cdb4db", "#ffc6ff", "#a0c4ff"];

export function looksOf(name) {
  if (LOOKS[name]) return LOOKS[name];
  let hash = 0;
  for (const ch of String(name)) hash = (hash * 31 + ch.charCodeAt(0)) >>> 0;
  return { accent: HATCHED[hash % HATCHED.length], extra: "" };
}

export function accentOf(name) {
  if (name === OWNER) return "#f4a261";
  return looksOf(name).accent;
}

const INK = "#110d1a";
const WING = "#231b36";
const BEAK = "#2d2640";

function extra(kind, accent) {
  switch (kind) {
    case "quill":
      return svg("g", { class: "extra" },
        svg("path", { d: "M78 28 Q70 8 54 2 Q64 12 70 22 Q62 16 58 16 Q68 24 74 30 Z", fill: accent }),
        svg("path", { d: "M76 29 Q66 12 55 3", stroke: "#b9a98a", "stroke-width": 1, fill: "none" }));
    case "cap":
      return svg("g", { class: "extra" },
        svg("path", { d: "M70 30 Q74 16 84 16 Q94 16 96 28 Z", fill: "#2a2140" }),
        svg("path", { d: "M70 29 Q84 24 96 28", stroke: accent, "stroke-width": 3, fill: "none" }),
        svg("path", { d: "M94 28 L104 30", stroke: "#2a2140", "stroke-width": 3, "stroke-linecap": "round" }));
    case "scarf":
      return svg("g", { class: "extra" },
        svg("path", { d: "M70 48 Q80 54 90 48 L90 53 Q80 60 70 54 Z", fill: accent }),
        svg("path", { d: "M72 52 Q58 58 40 50 Q50 60 36 62 Q56 66 74 56 Z", fill: accent, opacity: 0.9 }));
    case "spectacles":
      return svg("g", { class: "extra", fill: "none", stroke: accent, "stroke-width": 1.6 },
        svg("circle", { cx: 87, cy: 35, r: 5 }),
        svg("path", { d: "M82 34 L72 32" }));
    case "crest":
      return svg("path", { class: "extra", d: "M72 30 L70 16 L77 24 L79 11 L83 24 L89 15 L88 28 Z", fill: accent });
    case "redbeak":
      return svg("g", { class: "extra" },
        svg("path", { d: "M103 37 Q108 39 111 40 Q107 41.5 103 42.5 Z", fill: accent }),
        svg("circle", { cx: 108, cy: 47, r: 1.8, fill: accent }));
    case "tophat":
      return svg("g", { class: "extra" },
        svg("rect", { x: 75, y: 8, width: 15, height: 17, rx: 1.5, fill: "#1d1630" }),
        svg("rect", { x: 75, y: 19, width: 15, height: 3, fill: accent }),
        svg("rect", { x: 70, y: 24.5, width: 25, height: 3, rx: 1.5, fill: "#1d1630" }));
    case "goggles":
      return svg("g", { class: "extra" },
        svg("path", { d: "M70 30 Q82 25 96 29", stroke: "#3a2f52", "stroke-width": 3.2, fill: "none" }),
        svg("circle", { cx: 85, cy: 27.5, r: 4, fill: accent, stroke: "#3a2f52", "stroke-width": 1.5 }));
    case "helmet":
      return svg("g", { class: "extra" },
        svg("path", { d: "M69 33 Q71 17 83 17 Q95 17 96 31 Z", fill: "#2c2442" }),
        svg("path", { d: "M82 17 L84 6 L87 17 Z", fill: accent }),
        svg("path", { d: "M69 33 L96 31", stroke: accent, "stroke-width": 1.5 }));
    case "grey":
      return svg("g", { class: "extra" },
        svg("path", { d: "M71 30 Q78 22 88 23 Q94 25 95 30 Q86 27 78 32 Z", fill: accent, opacity: 0.85 }),
        svg("path", { d: "M82 31 L92 30", stroke: accent, "stroke-width": 1.4 }));
    default:
      return null;
  }
}

/** A whole crow, 120 × 100, feet on y = 88. */
export function crowSvg(name, { title = true } = {}) {
  const { accent, extra: kind } = looksOf(name);
  const grey = kind === "grey";
  return svg("svg", { class: "crow-art", viewBox: "0 0 120 100", role: "img", "aria-hidden": title ? null : "true" },
    title ? svg("title", {}, name) : null,
    svg("g", { class: "crow-figure" },
      svg("g", { class: "legs", stroke: BEAK, "stroke-width": 2.4, "stroke-linecap": "round", fill: "none" },
        svg("path", { d: "M54 72 L52 88 M48 88 L57 88" }),
        svg("path", { d: "M63 72 L65 88 M61 88 L70 88" })),
      svg("path", { class: "tail", d: "M36 60 L6 80 Q7 85 13 84 L42 70 Z", fill: INK }),
      svg("path", { class: "body", d: "M30 60 Q34 42 58 40 Q76 39 84 48 Q86 66 60 74 Q40 77 30 60 Z", fill: INK }),
      svg("circle", { class: "head", cx: 82, cy: 37, r: 13.5, fill: INK }),
      svg("path", { class: "beak", d: "M93 32 Q104 35 111 40 Q102 44 93 45 Z", fill: BEAK }),
      svg("path", { class: "beak-line", d: "M94 39.5 L108 40", stroke: INK, "stroke-width": 0.8 }),
      svg("path", { class: "band", d: "M72 49 Q81 55 91 47", stroke: accent, "stroke-width": 3, fill: "none", "stroke-linecap": "round" }),
      svg("g", { class: "wing-folded" },
        svg("path", { d: "M34 58 Q46 44 68 47 Q78 53 72 62 Q56 71 34 64 Z", fill: WING }),
        svg("path", { d: "M40 61 Q52 58 66 60 M44 65 Q54 63 64 64", stroke: grey ? accent : "#3a2f55", "stroke-width": 1.2, fill: "none" })),
      svg("g", { class: "wing-open" },
        svg("path", { d: "M48 50 Q36 20 12 8 Q22 22 24 30 Q14 26 6 28 Q20 36 24 42 Q18 42 14 46 Q36 54 56 56 Z", fill: WING }),
        svg("path", { d: "M46 48 Q34 30 16 16 M44 50 Q30 40 14 34", stroke: grey ? accent : "#3a2f55", "stroke-width": 1.2, fill: "none" })),
      svg("circle", { class: "eye", cx: 86.5, cy: 34.5, r: 2.7, fill: "#ffd166" }),
      svg("circle", { class: "glint", cx: 87.4, cy: 33.6, r: 0.9, fill: "#fff" }),
      extra(kind, accent)));
}

/** A round head-and-shoulders avatar for chat and chips. */
export function crowAvatar(name, size = 32) {
  if (name === OWNER || name === HARNESS) {
    const letter = name === OWNER ? "You" : "⚙";
    return svg("svg", { class: `avatar avatar-${name}`, viewBox: "0 0 40 40", width: size, height: size, "aria-hidden": "true" },
      svg("circle", { cx: 20, cy: 20, r: 19, fill: name === OWNER ? "#f4a261" : "#4a4162" }),
      svg("text", { x: 20, y: 25, "text-anchor": "middle", "font-size": name === OWNER ? 12 : 16, "font-weight": 700, fill: "#1a1426" }, letter));
  }
  const art = crowSvg(name, { title: false });
  art.setAttribute("viewBox", "55 8 60 60");
  art.setAttribute("width", size);
  art.setAttribute("height", size);
  art.classList.add("avatar");
  art.style.setProperty("--accent", accentOf(name));
  art.style.width = `${size}px`;
  art.style.height = `${size}px`;
  return art;
}
