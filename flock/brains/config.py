"""The settings brains read, with working defaults.

Brains read Django settings on every call (not at import), so ``override_settings`` and
pytest-django's ``settings`` fixture take effect at once. Outside a configured Django
(a bench script, ``pytest -p no:django``) every setting falls back to its default.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from flock.brains.registry import PROVIDERS

DEFAULTS: dict[str, Any] = {
    "CROWS_BRAIN": "mock",
    "CROWS_MOCK_LATENCY_MS": 0.0,
    "CROWS_MOCK_FAIL_RATE": 0.0,
    "CROWS_OPENAI_BASE_URL": "",
    "CROWS_OPENAI_API_KEY": "",
    "CROWS_ANTHROPIC_BASE_URL": "",
    "CROWS_ANTHROPIC_API_KEY": "",
    "CROWS_BRAIN_TIMEOUT_S": 30.0,
    "CROWS_BRAIN_RETRIES": 1,
    "CROWS_BRAIN_TEST_TIMEOUT_S": 10.0,
    "CROWS_SCRIPT_DIR": "",
}


def setting(name: str) -> Any:
    """``settings.<name>``, or its default when unset or when Django is not configured."""
    try:
        return getattr(settings, name, DEFAULTS.get(name, ""))
    except ImproperlyConfigured:
        return DEFAULTS.get(name, "")


def _float(name: str, *, minimum: float) -> float:
    try:
        value = float(setting(name))
    except (TypeError, ValueError):
        value = float(DEFAULTS[name])
    return max(minimum, value)


def _int(name: str, *, minimum: int) -> int:
    try:
        value = int(setting(name))
    except (TypeError, ValueError):
        value = int(DEFAULTS[name])
    return max(minimum, value)


@dataclass(frozen=True)
class MockConfig:
    latency_ms: float
    fail_rate: float


def mock_config() -> MockConfig:
    return MockConfig(
        latency_ms=_float("CROWS_MOCK_LATENCY_MS", minimum=0.0),
        fail_rate=min(1.0, _float("CROWS_MOCK_FAIL_RATE", minimum=0.0)),
    )


@dataclass(frozen=True)
class ProviderConfig:
    base_url: str  # "" means the SDK's default (which also honours OPENAI_BASE_URL / ANTHROPIC_BASE_URL)
    api_key: str  # "" means no key was found anywhere
    key_sources: str  # where a key was looked for, for the error sentence
    key_source: str  # the variable the key came from ("" when none)
    timeout_s: float
    retries: int


def provider_config(provider: str) -> ProviderConfig:
    """Settings for a remote provider of the registry (``openai``, ``anthropic``): its key
    setting, falling back to the SDK's env variable, and its base-URL setting."""
    known = PROVIDERS[provider]
    own_key = str(setting(known.key_setting) or "").strip()
    api_key = own_key or os.environ.get(known.env_key, "").strip()
    return ProviderConfig(
        base_url=str(setting(known.base_url_setting) or "").strip(),
        api_key=api_key,
        key_sources=f"{known.key_setting} or {known.env_key}",
        key_source=(known.key_setting if own_key else known.env_key) if api_key else "",
        timeout_s=_float("CROWS_BRAIN_TIMEOUT_S", minimum=0.01),
        retries=_int("CROWS_BRAIN_RETRIES", minimum=0),
    )


def default_brain_spec() -> str:
    return str(setting("CROWS_BRAIN") or "mock").strip() or "mock"


def brain_test_timeout_s() -> float:
    return _float("CROWS_BRAIN_TEST_TIMEOUT_S", minimum=0.1)
