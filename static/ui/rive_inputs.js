// The one place where flock events become animation inputs.
//
// Input names are the event names, so a Rive file (@rive-app/canvas) whose state machine
// declares these inputs can replace the SVG drawing in flock.js without touching anything
// else: give each crow an artboard, and for every {crow, input, value} below call
// `stateMachineInputs(...).find(i => i.name === input)` then `.fire()` for a trigger or
// `.value = value` for a boolean. `crow: "*"` means every crow on the wire.
//
//   input                type     set by
//   crow.flying          trigger  crow.flying            takes off toward the item
//   ok                   boolean  crow.landed (.ok)      read by the landing transition
//   crow.landed          trigger  crow.landed            lands (ok) or tumbles (not ok)
//   crow.banter          trigger  crow.banter            speech bubble (text run "banter")
//   requester.pranked    trigger  requester.pranked      the whole flock pranks back
//   crow.quarantined     boolean  crow.quarantined/.reinstated   caged while true

export const INPUTS = Object.freeze({
  "crow.flying": "trigger",
  ok: "boolean",
  "crow.landed": "trigger",
  "crow.banter": "trigger",
  "requester.pranked": "trigger",
  "crow.quarantined": "boolean",
});

/**
 * The inputs one event sets, in the order they must be applied.
 * @returns {{crow: string, input: string, value: boolean|true, text?: string, to?: string, item_id?: string}[]}
 */
export function inputsFor(name, data = {}) {
  switch (name) {
    case "crow.flying":
      return [{ crow: data.crow, input: "crow.flying", value: true, item_id: data.item_id }];
    case "crow.landed":
      return [
        { crow: data.crow, input: "ok", value: Boolean(data.ok) },
        { crow: data.crow, input: "crow.landed", value: true, item_id: data.item_id },
      ];
    case "crow.banter":
      return [{ crow: data.crow, input: "crow.banter", value: true, text: data.text, to: data.to }];
    case "requester.pranked":
      return [{ crow: "*", input: "requester.pranked", value: true, text: data.message }];
    case "crow.quarantined":
      return [{ crow: data.crow, input: "crow.quarantined", value: true }];
    case "crow.reinstated":
      return [{ crow: data.crow, input: "crow.quarantined", value: false }];
    default:
      return [];
  }
}
