// /settings: the default brain and each crow's model; change a model (PATCH
// /api/crows/{name}, the admin's update_crow), and Test connection (one tiny call:
// latency, or the provider's error in plain words).

import { $, h } from "../dom.js";
import { api, get, post, ApiError } from "../api.js";
import { ask } from "../dialog.js";
import { toast, messageOf } from "../notify.js";
import { crowAvatar } from "../crow_art.js";

function showResult(el, result, note) {
  const which = note ? ` (${note})` : "";
  // The mock connects to nothing: it says so in neutral words, never a green "Connected".
  el.classList.toggle("ok", result.ok && !result.mock);
  el.classList.toggle("bad", !result.ok);
  el.classList.toggle("neutral", Boolean(result.ok && result.mock));
  if (result.ok && result.mock) {
    el.textContent = `offline mock: no model called${which}.`;
    return;
  }
  el.textContent = result.ok
    ? `Connected: ${result.provider}:${result.model}${which} answered in ${Math.round(result.latency_ms)} ms${result.note ? `; ${result.note}` : ""}.`
    : `Failed${which}: ${result.error}`;
}

async function test(body, el, button, note = "") {
  button.disabled = true;
  el.classList.remove("ok", "bad");
  el.textContent = "Testing…";
  try {
    showResult(el, await post("/api/brains/test", body), note);
  } catch (err) {
    el.classList.add("bad");
    el.textContent = `Failed${note ? ` (${note})` : ""}: ${messageOf(err)}`;
  } finally {
    button.disabled = false;
  }
}

function row(crow, defaultBrain) {
  const id = `model-${crow.name}`;
  // A crow pinned to the same model as the default still shows it: it keeps that model
  // when CROWS_BRAIN changes (`pinned`; older servers without it: compare the specs).
  const pinned = crow.pinned ?? crow.model !== defaultBrain;
  const input = h("input", { id, value: pinned ? crow.model : "", placeholder: `default (${defaultBrain})`,
    size: 26, spellcheck: "false", autocomplete: "off" });
  const error = h("p", { class: "form-error", role: "alert", hidden: true });
  const result = h("span", { class: "test-result", role: "status" });
  const save = h("button", { type: "submit", class: "btn small", "aria-label": `Save ${crow.name}'s model` }, "Save");
  const testButton = h("button", { type: "button", class: "btn small ghost", "aria-label": `Test connection for ${crow.name}` }, "Test connection");
  const form = h("form", { class: "model-form", dataset: { crow: crow.name } },
    h("label", { for: id, class: "sr-only" }, `Model for ${crow.name}`), input, save, error);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    error.hidden = true;
    save.disabled = true;
    const model = input.value.trim();
    const patch = (body) => api("PATCH", `/api/crows/${encodeURIComponent(crow.name)}`, body);
    try {
      let updated;
      try {
        updated = await patch({ model });
      } catch (err) {
        // A model no key can call yet: the server says why; saving it takes the owner's yes.
        if (!(err instanceof ApiError) || err.status !== 409) throw err;
        save.disabled = false; // focus comes back to it when the dialog closes
        const yes = await ask({
          title: `Save ${model} for ${crow.name} anyway?`,
          message: `${messageOf(err).replace(/ Send confirm: true to save it anyway\.$/, "")}. Until then ${crow.name}'s flights fail.`,
          confirm: `Save for ${crow.name} anyway`, cancel: "Keep the current model", returnTo: save,
        });
        if (!yes) {
          error.textContent = messageOf(err).replace(/ Send confirm: true to save it anyway\.$/, "");
          error.hidden = false;
          return;
        }
        updated = await patch({ model, confirm: true });
      }
      toast(`${crow.name} now thinks with ${updated.model}.`, "good");
      result.textContent = "";
      crow.model = updated.model;
      crow.pinned = updated.pinned ?? Boolean(input.value.trim());
    } catch (err) {
      error.textContent = messageOf(err);
      error.hidden = false;
    } finally {
      save.disabled = false;
    }
  });
  // An old error or result says nothing about a model being typed now.
  input.addEventListener("input", () => { error.hidden = true; result.textContent = ""; result.classList.remove("ok", "bad"); });
  // Test what the box says: the saved model, or the one typed and not saved yet.
  testButton.addEventListener("click", () => {
    error.hidden = true;
    const typed = input.value.trim();
    const saved = (crow.pinned ?? crow.model !== defaultBrain) ? crow.model : "";
    if (typed === saved) return test({ crow: crow.name }, result, testButton);
    return test(typed ? { model: typed } : {}, result, testButton, typed ? "not saved yet" : "the default brain, not saved yet");
  });
  return h("tr", { dataset: { crow: crow.name } },
    h("th", { scope: "row" }, h("a", { href: `/crows/${encodeURIComponent(crow.name)}`, class: "crow-link" }, crowAvatar(crow.name, 22), crow.name)),
    h("td", {}, crow.role),
    h("td", {}, form),
    h("td", {}, testButton, " ", result));
}

async function main() {
  const testDefault = $("#test-default");
  testDefault.addEventListener("click", () => test({}, $("#test-default-result"), testDefault));
  try {
    const brains = await get("/api/brains");
    $("#default-brain").textContent = brains.default;
    $("#crow-brains").replaceChildren(...brains.crows.map((c) => row(c, brains.default)));
  } catch (err) {
    toast(`Could not read the brains: ${messageOf(err)}`, "error");
  }
}

main();
