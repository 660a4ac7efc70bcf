// The flock's vocabularies, from their one source on the server (flock/vocab.py), which
// every page puts into its data (ui.vocab). The fallbacks only serve a page without it.

import { uiConfig } from "./dom.js";

const vocab = uiConfig().vocab || {};

export const OWNER = vocab.owner || "owner";
export const HARNESS = vocab.harness || "harness";
export const SENTRY = vocab.sentry || "Sentry";
export const KINDS = vocab.kinds || ["say", "request", "claim", "deliver", "refer", "decline", "nudge", "flag"];
export const CROW_KINDS = vocab.crow_kinds || KINDS.slice(0, 6);
export const LEVEL_WORDS = vocab.trust_levels || ["stranger", "regular", "trusted"];
