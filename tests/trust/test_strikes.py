"""Pranks: over the rate in a rolling minute, a poster gets a strike, a 429 with a playful
message and a cooldown that doubles with each further strike within a day."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from flock.errors import RateLimited
from trust.actions import admit_post, poster_key
from trust.models import Strike


@pytest.fixture
def tight_limits(settings):
    settings.CROWS_LIST_RATE_PER_MIN = 3
    settings.CROWS_NEST_POST_RATE_PER_MIN = 5
    settings.CROWS_PRANK_COOLDOWN_S = 60


def test_posts_over_the_rate_get_a_strike_with_a_playful_cooldown(db, tight_limits):
    key = poster_key(requester="mallory")
    for _ in range(3):
        admit_post(key, kind="list")
    with pytest.raises(RateLimited) as refused:
        admit_post(key, kind="list")
    assert refused.value.cooldown_s == 60 and refused.value.status == 429
    assert "60" in refused.value.message
    assert Strike.objects.filter(key=key).count() == 1


def test_while_cooling_down_every_post_is_refused_without_a_new_strike(db, tight_limits):
    key = poster_key(requester="mallory")
    for _ in range(3):
        admit_post(key, kind="list")
    for _ in range(3):
        with pytest.raises(RateLimited) as refused:
            admit_post(key, kind="list")
    assert 0 < refused.value.cooldown_s <= 60
    assert Strike.objects.filter(key=key).count() == 1


def test_a_post_as_the_cooldown_ends_with_the_minute_still_full_earns_a_doubled_strike(db, tight_limits, settings):
    # The rate is a rolling minute (docs/LISTS.md, 429); the cooldown does not empty it.
    settings.CROWS_PRANK_COOLDOWN_S = 5
    key = poster_key(requester="gina")
    for _ in range(3):
        admit_post(key, kind="list")
    with pytest.raises(RateLimited) as refused:
        admit_post(key, kind="list")
    assert refused.value.cooldown_s == 5
    Strike.objects.filter(key=key).update(until=timezone.now() - timedelta(seconds=1))
    with pytest.raises(RateLimited) as again:
        admit_post(key, kind="list")
    assert again.value.cooldown_s == 10


def test_cooldown_doubles_with_each_strike_within_a_day(db, tight_limits):
    key = poster_key(requester="mallory")
    cooldowns = []
    for _ in range(3):
        for _ in range(3):
            admit_post(key, kind="list")
        with pytest.raises(RateLimited) as refused:
            admit_post(key, kind="list")
        cooldowns.append(refused.value.cooldown_s)
        # Let the cooldown and the rolling minute pass.
        past = timezone.now() - timedelta(minutes=5)
        Strike.objects.filter(key=key).update(until=past, at=past)
        from trust.models import Post

        Post.objects.filter(key=key).update(at=past)
    assert cooldowns == [60, 120, 240]


def test_the_cooldown_stops_doubling_at_a_day_however_many_strikes_the_day_holds(db, tight_limits):
    # The admin's Lift cooldown ends a cooldown but leaves its strike counted: 40 strikes
    # in a day would be a cooldown of 60 * 2**40 s, past any date (it was a server error).
    key = poster_key(requester="mallory")
    now = timezone.now()
    Strike.objects.bulk_create(
        Strike(key=key, kind="list", cooldown_s=60, at=now - timedelta(minutes=n + 1), until=now - timedelta(minutes=n))
        for n in range(40)
    )
    for _ in range(3):
        admit_post(key, kind="list")
    with pytest.raises(RateLimited) as refused:
        admit_post(key, kind="list")
    assert refused.value.cooldown_s == 86_400
    assert "86400" in refused.value.message


def test_requesters_crows_and_the_owner_never_share_strikes(db, tight_limits):
    for _ in range(3):
        admit_post(poster_key(requester="Pepper"), kind="list")
    with pytest.raises(RateLimited):
        admit_post(poster_key(requester="Pepper"), kind="list")
    admit_post(poster_key(crow="Pepper"), kind="list")
    admit_post(poster_key(owner=True), kind="list")


def test_list_and_nest_rates_are_counted_apart(db, tight_limits):
    key = poster_key(owner=True)
    for _ in range(3):
        admit_post(key, kind="list")
    for _ in range(5):
        admit_post(key, kind="nest")


def test_strike_hooks_hear_of_each_strike(db, tight_limits, monkeypatch):
    heard = []
    monkeypatch.setattr("trust.actions.strikes._strike_hooks", [lambda *a: heard.append(a)])
    key = poster_key(requester="mallory")
    for _ in range(3):
        admit_post(key, kind="list")
    with pytest.raises(RateLimited):
        admit_post(key, kind="list")
    assert heard and heard[0][0] == key and heard[0][2] == 60
