"""`manage.py load_personas FILE [--dry-run]`: add or update crows from YAML or JSON.

The file is a list of crows, or `{"crows": [...]}`; each has a `name` and any of
epithet, strength, backstory, persona, voice, model, task_types. A name not in the
flock hatches a new crow (it needs a `strength`). Everything is checked before anything
is written, and the whole file is applied in one transaction: all or nothing. The
command prints what changes, field by field (docs/OPERATING.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from django.core.management.base import CommandError
from django.db import transaction

from flock.actions import (
    CROW_NAME_RE,
    EDITABLE_FIELDS,
    RESERVED_NAMES,
    clean_crow_field,
    hatch_crow,
    update_crow,
)
from flock.errors import CrowsError
from flock.management.cli import CrowsCommand
from flock.models import Crow

HATCH_FIELDS = ("epithet", "strength", "persona", "voice", "model", "task_types")
LOADED_BY = "load_personas"


class DryRun(Exception):
    pass


def read_file(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CommandError(f"{path} is not UTF-8 text") from None
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise CommandError(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}" if where else ""
        raise CommandError(f"{path} is not valid YAML{at}: {getattr(exc, 'problem', None) or exc}") from None
    if isinstance(data, dict) and "crows" in data:
        data = data["crows"]
    if not isinstance(data, list) or not data:
        raise CommandError(f"{path} must hold a non-empty list of crows (or {{\"crows\": [...]}})")
    return data


def check(entries: list[Any]) -> list[tuple[str, Crow | None, dict[str, Any]]]:
    """Every problem in the file at once, or the plan: (name, existing crow or None, fields)."""
    problems: list[str] = []
    plan: list[tuple[str, Crow | None, dict[str, Any]]] = []
    seen: set[str] = set()
    for n, entry in enumerate(entries, 1):
        where = f"crow #{n}"
        if not isinstance(entry, dict):
            problems.append(f"{where}: expected a mapping of fields, got {type(entry).__name__}")
            continue
        name = entry.get("name")
        named = isinstance(name, str) and bool(CROW_NAME_RE.fullmatch(name.strip()))
        if not named:
            # Reported, and the entry's other fields still checked: every problem at once.
            problems.append(f"{where}: name must be 1–40 letters, digits, '-' or '_', starting with a capital letter")
        else:
            assert isinstance(name, str)
            name = name.strip()
            where = f"{name} (#{n})"
            if name.lower() in seen:
                problems.append(f"{where}: listed twice")
                continue
            seen.add(name.lower())
        unknown = sorted(set(entry) - {"name", *EDITABLE_FIELDS})
        if unknown:
            # Reported, and the known fields still checked: every problem at once.
            problems.append(f"{where}: unknown field(s) {', '.join(unknown)}; known: name, {', '.join(EDITABLE_FIELDS)}")
        fields: dict[str, Any] = {}
        for field, value in entry.items():
            if field == "name" or field in unknown:
                continue
            try:
                fields[field] = clean_crow_field(field, value)
            except CrowsError as exc:
                problems.append(f"{where}: {exc.message}")
        if not named:
            continue
        assert isinstance(name, str)
        crow = Crow.objects.filter(name__iexact=name).first()
        if crow is None and name.lower() in RESERVED_NAMES:
            problems.append(f"{where}: {name!r} is a reserved name")
        if crow is None and "strength" not in fields:
            problems.append(f"{where}: a new crow needs a strength (what it is good at)")
        if crow is not None and crow.status == Crow.Status.RETIRED:
            problems.append(f"{where}: {crow.name} is retired; its record stays as it was")
        plan.append((crow.name if crow else name, crow, fields))
    if problems:
        raise CommandError(f"{len(problems)} problem(s), nothing loaded: " + "; ".join(problems))
    return plan


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
    text = " ".join(text.split())
    return text if len(text) <= 70 else text[:67] + "..."


class Command(CrowsCommand):
    help = (
        "Add or update crows from a YAML or JSON file (a list of {name, epithet, strength, backstory, "
        "persona, voice, model, task_types}); validated first, applied all or nothing, with a diff."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("file", metavar="FILE", help="a .yaml/.yml or .json file")
        parser.add_argument("--dry-run", action="store_true", help="show the diff; change nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        plan = check(read_file(Path(options["file"])))
        diff: list[tuple[str, str, str, str]] = []
        try:
            with transaction.atomic():
                for name, crow, fields in plan:
                    if crow is None:
                        hatched = hatch_crow(
                            name, hatched_by=LOADED_BY, **{f: v for f, v in fields.items() if f in HATCH_FIELDS}
                        )
                        if "backstory" in fields:
                            update_crow(hatched, by=LOADED_BY, backstory=fields["backstory"])
                        diff.append((f"+ {name}", "(new crow)", "", ", ".join(f"{f}={_short(v)}" for f, v in fields.items())))
                        continue
                    before = {f: getattr(crow, f) for f in fields}
                    update_crow(crow, by=LOADED_BY, **fields)
                    changed = [f for f in fields if before[f] != fields[f]]
                    if not changed:
                        diff.append((f"= {name}", "(unchanged)", "", ""))
                    for field in changed:
                        diff.append((f"~ {name}", field, _short(before[field]), _short(fields[field])))
                if options["dry_run"]:
                    raise DryRun
        except DryRun:
            pass
        except CrowsError as exc:
            raise CommandError(f"nothing loaded: {exc.message}") from None
        self.table("Personas" + (" (dry run: nothing changed)" if options["dry_run"] else ""), ["crow", "field", "was", "now"], diff)
        added = sum(1 for d in diff if d[0].startswith("+"))
        updated = len({d[0] for d in diff if d[0].startswith("~")})
        verb = "would be" if options["dry_run"] else "were"
        self.stdout.write(f"{added} crow(s) {verb} added, {updated} updated, {len(plan) - added - updated} unchanged")
