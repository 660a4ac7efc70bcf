"""One provider registry (flock/brains/registry.py) is read by everything that reads a
provider: brain building, the SDK warm-up, the key checks of start-up and the settings
page, the model-spec check of the actions and the API document, and Boss's orders. Each
test adds a provider, or reads one, through the registry and sees the reader follow."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import pytest

from flock import actions, brains, schemas
from flock.brains import providers as provider_brains
from flock.brains import registry
from flock.brains.probe import is_mock, why_no_model
from flock.brains.registry import PROVIDERS, WIRE_OPENAI_CHAT, Provider, complete_spec, parse_spec
from nests.actions.chat import boss

ROOT = Path(__file__).resolve().parents[2]
ACME = Provider(
    name="acme", label="Acme", wire=WIRE_OPENAI_CHAT, needs_model=True, default_model="acme-1", sdk="json",
    key_setting="CROWS_ACME_API_KEY", env_key="ACME_API_KEY", base_url_setting="CROWS_ACME_BASE_URL",
    env_base_url="ACME_BASE_URL", default_host="api.acme.test",
)


@pytest.fixture
def acme(monkeypatch, settings):
    """A provider that exists only in the registry, speaking the OpenAI wire format."""
    monkeypatch.setitem(PROVIDERS, "acme", ACME)
    monkeypatch.delenv("ACME_API_KEY", raising=False)
    settings.CROWS_ACME_API_KEY = ""
    settings.CROWS_ACME_BASE_URL = ""
    return ACME


def test_a_spec_parses_at_its_first_colon():
    assert parse_spec(" OpenAI:llama3.1:8b ") == registry.BrainSpec("openai", "llama3.1:8b")
    assert parse_spec("anthropic:claude-sonnet-4@20250514").known is PROVIDERS["anthropic"]
    assert parse_spec("gpt-4o").known is None


def test_brain_building_follows_the_registry(acme):
    brain = brains.get_brain("acme:acme-1")
    assert isinstance(brain, provider_brains.OpenAIBrain) and brain.provider == "acme" and brain.model == "acme-1"
    brains.check_brain_spec("acme:acme-1")  # a provider of the registry is a provider
    with pytest.raises(brains.BrainSpecError, match="names no model: write acme:<model>"):
        brains.check_brain_spec("acme")
    assert brains.missing_key("acme:acme-1") == "CROWS_ACME_API_KEY or ACME_API_KEY"


def test_an_unknown_provider_names_the_registrys_choices():
    with pytest.raises(brains.BrainSpecError, match=r"use mock, openai:<model>, anthropic:<model> or script:<path>"):
        brains.check_brain_spec("gpt-4o")


def test_warm_up_imports_the_registrys_sdk(acme, monkeypatch):
    imported = threading.Event()
    names: list[str] = []

    def fake_import(name: str) -> None:
        names.append(name)
        imported.set()

    monkeypatch.setattr(provider_brains.importlib, "import_module", fake_import)
    monkeypatch.setattr(provider_brains, "_warmed", set())
    provider_brains.warm_up("mock")  # not remote: nothing to import
    provider_brains.warm_up("acme")
    assert imported.wait(10)
    assert names == ["json"]


def test_the_key_check_of_the_settings_page_follows_the_registry(acme):
    assert why_no_model("acme:acme-1") == (
        "no Acme key: set CROWS_ACME_API_KEY or ACME_API_KEY (or CROWS_ACME_BASE_URL for a local server) and restart"
    )
    assert is_mock("mock:anything") and not is_mock("acme:acme-1")


def test_the_model_spec_check_is_the_registrys_in_the_actions_and_the_document():
    assert actions.MODEL_SPEC_RE is registry.SPEC_RE
    assert schemas.MODEL_SPEC == registry.SPEC_PATTERN
    assert actions.MODEL_SPEC_WORDS == registry.SPEC_WORDS
    for name, provider in PROVIDERS.items():
        assert bool(registry.SPEC_RE.fullmatch(name)) == (not provider.needs_model), name
        assert registry.SPEC_RE.fullmatch(f"{name}:m-1.2@x/y")


def test_boss_reads_orders_with_the_registrys_providers_and_default_models():
    assert boss.PROVIDER_WORDS == registry.names_pattern()
    for name in PROVIDERS:
        order = boss.parse_order(f"@Boss hatch a crow named Wren who is good at data using {name}")
        assert order is not None and order.model == complete_spec(name), name
    anthropic = PROVIDERS["anthropic"]
    switch = boss.parse_order("@Boss switch Hugin to anthropic")
    assert switch is not None and switch.model == f"anthropic:{anthropic.default_model}"
    ask = boss.parse_order("@Boss switch Hugin to gpt-4o")
    assert ask is not None and all(f"{p}:gpt-4o" in ask.say for p in registry.provider_names(remote=True))


# The readers of a provider: none spells a provider's name for itself, or a list of them.
# ("mock" alone is also the default brain's spec and a page's flag, so it is let be.)
READERS = [
    "flock/brains/__init__.py", "flock/brains/config.py", "flock/brains/probe.py", "flock/actions.py",
    "flock/schemas.py", "nests/actions/chat/boss.py", "nests/views.py", "flock/api.py",
]


@pytest.mark.parametrize("path", READERS)
def test_no_reader_spells_a_providers_name(path):
    names = set(PROVIDERS)
    alone = names - {"mock"}
    found = []
    for node in ast.walk(ast.parse((ROOT / path).read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            words = set(node.value.replace("(", "|").replace(")", "|").replace(":", "|").split("|"))
            if node.value in alone or len(words & names) >= 2:
                found.append((node.lineno, node.value[:60]))
    assert not found, f"{path} spells provider names; read flock/brains/registry.py instead: {found}"
