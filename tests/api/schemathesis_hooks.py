"""schemathesis hooks for tests/api/test_schemathesis.py (loaded through SCHEMATHESIS_HOOKS).

One check stands in for schemathesis's `positive_data_acceptance`: every request the API
document allows is taken, except for the few refusals the contract makes 400s although
they depend on the flock's state, which no schema can state (docs/API.md, "Rules no schema
states"): who is a member of the nest, which messages it holds, which crows are
quarantined, the cap of nests, and a script: brain's file on the server's disk. Each is matched by the words of its message; any other 400
to a schema-valid request fails, as does anything outside the check's own expected
statuses."""

from __future__ import annotations

import re

import schemathesis
from schemathesis.specs.openapi.checks import positive_data_acceptance

# The refusals of schema-valid requests the contract (EVENTS.md) makes 400s, each a rule
# about the flock's state. Anchored on the message the action gives.
STATE_400 = {
    "an author must be the owner or a member of the nest": r"^.* is not a member of [a-z0-9-]+; post through a member",
    "an addressee likewise": r"^to must be the owner or a member of [a-z0-9-]+, not ",
    "a referenced message must be one of the nest's": r"^refers_to .* is not a message of [a-z0-9-]+$",
    "the Sentry speaks only in flags, through the harness": r"^Sentry speaks only in flags",
    "a quarantined crow may not speak": r"^\w+ is quarantined and may not speak",
    "the cap of nests": r"^the flock already has \d+ nests, the most it keeps$",
    # A script: brain's file is judged on the server's disk, under the operator's
    # CROWS_SCRIPT_DIR (docs/BRAINS.md): the document can state its shape only.
    "a script: brain's file must exist and hold rules": r"^.*: the brain script ",
    "a script: brain only from CROWS_SCRIPT_DIR": r"^script: (brains are refused here|must name a regular file)",
    # A change of a nest's core (docs/GOVERNANCE.md, 3): against the core as it stands.
    "a crow added is not a member yet": r"^already members of [a-z0-9-]+: ",
    "a crow removed is a member": r"^not members of [a-z0-9-]+: ",
    "a nest keeps 1 to 8 core crows": r"^[a-z0-9-]+ would have \d+ core crows",
    "the open flock and direct chats have no core to change": r"^[a-z0-9-]+ is (the open flock|a direct chat); its members are not picked",
    "a crow is added or removed, not both": r" cannot be added and removed at once$",
}
_STATE_400 = [re.compile(pattern, re.DOTALL) for pattern in STATE_400.values()]


def refused_for_the_flocks_state(response) -> bool:
    if response.status_code != 400:
        return False
    try:
        message = response.json()["message"]
    except Exception:
        return False
    return isinstance(message, str) and any(rule.search(message) for rule in _STATE_400)


@schemathesis.check
def schema_valid_data_taken(ctx, response, case):
    """positive_data_acceptance, but for the contract's state-dependent 400s (STATE_400)."""
    if refused_for_the_flocks_state(response):
        return None
    return positive_data_acceptance(ctx, response, case)
