"""The offline mock brain keeps its contract: a round of ordinary work with the real Jev
and every worker crow trips no Sentry breach (no false quarantines in a demo)."""

from __future__ import annotations

import pytest

from nests.actions import post_message
from tests.support.scripted_brain import run_crows
from trust.models import Breach

ASKS = [
    "could you write a tiny script that counts the shiny things in the nest?",
    "please find three facts about corvid memory",
    "draft a launch tweet for the crow café",
    "plan a Saturday clean-up of the nest",
    "what do you think of todo-1?",
]


@pytest.mark.django_db
def test_a_round_of_mock_work_trips_no_breach(settings):
    settings.CROWS_BRAIN = "mock"
    settings.CROWS_EXCHANGES_PER_TURN = 4
    for crow in ("Hugin", "Munin", "Pepper", "Inky", "Soot", "Rook"):
        for ask in ASKS[:3] if crow != "Rook" else ASKS:
            post_message("todo", author="owner", text=f"@{crow} {ask}", kind="request")
            run_crows()
    # Unaddressed work (dispatch by fit, or Quill routing it) and a question for Quill.
    for text in ("Could someone summarise the launch notes?", "what's happening?", "Sketch a plan for the bake sale"):
        post_message("todo", author="owner", text=text)
        run_crows()
    assert list(Breach.objects.values_list("crow", "kind", "evidence")) == []
