// Keys every page shares: the skip links put focus in the box they name (the new list on
// the flock page, the message box in a nest), and `/` focuses that box from anywhere that
// is not already taking text. docs/UI.md, "Keyboard".

const COMPOSERS = ["#composer-text", "#list-text"];

function composer() {
  for (const selector of COMPOSERS) {
    const el = document.querySelector(selector);
    if (el && !el.disabled && el.offsetParent !== null) return el;
  }
  return null;
}

function takesText(el) {
  if (!el || el === document.body) return false;
  if (el.isContentEditable) return true;
  const tag = el.tagName;
  if (tag === "TEXTAREA" || tag === "SELECT") return true;
  if (tag !== "INPUT") return false;
  return !["button", "checkbox", "radio", "submit", "reset", "range", "color", "file"].includes(el.type);
}

for (const link of document.querySelectorAll(".skip-link[data-focus]")) {
  link.addEventListener("click", (e) => {
    const target = document.querySelector(link.dataset.focus);
    if (!target) return;
    e.preventDefault();
    target.focus();
    target.scrollIntoView({ block: "nearest" });
  });
}

document.addEventListener("keydown", (e) => {
  if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) return;
  if (takesText(document.activeElement) || document.querySelector("dialog[open]")) return;
  const box = composer();
  if (!box) return;
  e.preventDefault();
  box.focus();
});
