from __future__ import annotations

from django.db import models


class Poster(models.Model):
    """One row per key that ever posted, locked while deciding on its next post so two
    concurrent posts cannot both slip under the limit."""

    key = models.CharField(max_length=120, unique=True)


class Post(models.Model):
    """An accepted post (a list or a nest message), counted for the rolling-minute rate."""

    key = models.CharField(max_length=120)
    kind = models.CharField(max_length=8)  # "list" | "nest"
    at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["key", "kind", "at"], name="post_rate")]


class Strike(models.Model):
    """Append-only: a poster went over its rate and is cooling down until `until`."""

    key = models.CharField(max_length=120)
    kind = models.CharField(max_length=8)
    cooldown_s = models.PositiveIntegerField()
    at = models.DateTimeField()
    until = models.DateTimeField()
    message = models.CharField(max_length=300)

    class Meta:
        indexes = [models.Index(fields=["key", "at"], name="strike_key_at")]
