// In-page dialogs in place of the browser's prompt() and confirm(): a modal <dialog> (focus
// moves into it, Tab stays inside, Esc cancels) that names what it is about, and gives
// focus back to where it was when it closes, or to `returnTo` when that is gone.

import { h } from "./dom.js";

let counter = 0;

/**
 * Ask the owner. Resolves to `true` (or the typed text when `input` is given) on the
 * confirming button, `null` on Cancel or Esc.
 * @param {object} opts
 * @param {string} opts.title      the question, as the dialog's name
 * @param {string} [opts.message]  what happens, in a sentence or two
 * @param {string} opts.confirm    the confirming button's words ("Retire Rook")
 * @param {string} [opts.cancel]
 * @param {string|null} [opts.input] a label: the dialog then asks for text (optional)
 * @param {boolean} [opts.danger]  the confirming button warns
 * @param {HTMLElement|null} [opts.returnTo] where focus goes if the opener is gone
 */
export function ask({ title, message = "", confirm, cancel = "Cancel", input = null, danger = false, returnTo = null }) {
  const active = document.activeElement;
  const opener = active instanceof HTMLElement && active !== document.body ? active : null;
  counter += 1;
  const id = `crows-dialog-${counter}`;
  const field = input === null ? null : h("textarea", { id: `${id}-input`, rows: 3, class: "dialog-input" });
  const yes = h("button", { type: "submit", class: `btn ${danger ? "reject" : "primary"}`, value: "yes" }, confirm);
  const no = h("button", { type: "button", class: "btn ghost", value: "no" }, cancel);
  const form = h("form", { method: "dialog" },
    h("h2", { id: `${id}-title` }, title),
    message ? h("p", { id: `${id}-text` }, message) : null,
    field ? h("label", { for: field.id }, input) : null,
    field,
    h("div", { class: "dialog-actions" }, no, yes));
  const dialog = h("dialog", {
    class: "crows-dialog", "aria-labelledby": `${id}-title`, ...(message ? { "aria-describedby": `${id}-text` } : {}),
  }, form);
  document.body.append(dialog);
  return new Promise((resolve) => {
    let answer = null;
    form.addEventListener("submit", () => { answer = field ? field.value : true; });
    no.addEventListener("click", () => dialog.close());
    dialog.addEventListener("close", () => {
      dialog.remove();
      const usable = (el) => el && el.isConnected && !el.disabled;
      const back = usable(opener) ? opener : usable(returnTo) ? returnTo : null;
      if (back) back.focus();
      resolve(answer);
    }, { once: true });
    dialog.showModal();
    (field || (danger ? no : yes)).focus();
  });
}
