"""The apps' imports run one way only: flock <- trust <- nests (STYLE.md)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {"flock": ("trust", "nests"), "trust": ("nests",)}


def imported_apps(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_flock_imports_neither_trust_nor_nests_and_trust_never_imports_nests():
    offenders = []
    for app, forbidden in FORBIDDEN.items():
        for path in (ROOT / app).rglob("*.py"):
            bad = imported_apps(path) & set(forbidden)
            if bad:
                offenders.append(f"{path.relative_to(ROOT)} imports {', '.join(sorted(bad))}")
    assert offenders == []
