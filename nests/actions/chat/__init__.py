"""The chatroom's core (docs/CHATROOM.md, "The chat core"): `room.say` stores a message,
the reactors (sentry, decision_phrase, work, dispatch, expectations, debates,
orchestration, silent) read it and return effects, and `react` applies them in one
written-down order. post_message (nests/actions/messages.py) is a member's way in; the
invocation task (crows.invoke_crow), the ledger's timer (timers), Boss moderating
(moderator) and the Sentry's own flags (flags) are the others."""
