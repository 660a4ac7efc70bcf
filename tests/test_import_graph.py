"""The first-party import graph (crows_site, flock, trust, nests), imports written inside
functions included (STYLE.md, "Saying is not reacting"): a late import is a smell, not a
fix for a circle.

- The chat core (nests.actions.chat, nests.actions.messages, the chat tasks, the queries it
  reads) is in no circle and writes no import inside a function.
- Elsewhere, no circle but the ones named in KNOWN_CIRCLES (each still to cut; a new one,
  or a known one that grew, fails naming its modules), and no more late imports than
  LATE_IMPORTS_MAX, today's count, which only goes down. Imports under `if TYPE_CHECKING:`
  are for the type checker and never run, so they are not edges.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APPS = ("crows_site", "flock", "trust", "nests")
CHAT_CORE = (
    "nests.actions.chat",
    "nests.actions.messages",
    "nests.tasks_chat",
    "nests.queries",
    "nests.queries_ledger",
    "nests.wiring",
)
# Circles outside the chat core, to cut as the chat core's was (move reads to queries
# modules function by function, hand tasks over through a hook wired in AppConfig.ready()).
KNOWN_CIRCLES = (
    frozenset({"flock.events", "flock.stream.hub"}),
    frozenset({"flock.jev.fit", "flock.jev.llm", "flock.jev.service"}),
    frozenset({"trust.actions.decisions", "trust.actions.quarantine", "trust.actions.verdicts", "trust.tasks"}),
    frozenset({
        "nests.actions.lists", "nests.actions.lists.approvals", "nests.actions.lists.banter",
        "nests.actions.lists.ending", "nests.actions.lists.flights", "nests.actions.lists.intake",
        "nests.actions.lists.progress", "nests.actions.lists.recovery", "nests.actions.lists.retry",
        "nests.actions.lists.sorties", "nests.actions.lists.triage", "nests.tasks",
    }),
    frozenset({"nests.actions.retention", "nests.tasks_retention"}),
    frozenset({"crows_site.api", "crows_site.middleware", "crows_site.security"}),
)
# Late first-party imports in the whole codebase today; lower it as they go. Each AppConfig
# keeps exactly one (its wiring module, which imports models: Django's app registry must
# be ready first).
LATE_IMPORTS_MAX = 85


@dataclass(frozen=True)
class Late:
    module: str
    line: int
    target: str


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> dict[str, Path]:
    return {
        _module(p): p for app in APPS for p in (ROOT / app).rglob("*.py") if "migrations" not in p.parts
    }


def _type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def graph() -> tuple[dict[str, set[str]], list[Late]]:
    modules = _sources()

    def resolve(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    edges: dict[str, set[str]] = {}
    late: list[Late] = []
    for module, path in modules.items():
        out: set[str] = set()

        def visit(node: ast.AST, in_function: bool, module: str = module, out: set[str] = out) -> None:
            for child in ast.iter_child_nodes(node):
                if _type_checking(child):
                    continue
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    if isinstance(child, ast.Import):
                        names = [alias.name for alias in child.names]
                    elif child.level == 0 and child.module:
                        names = [f"{child.module}.{alias.name}" for alias in child.names]
                    else:
                        names = []
                    targets = {resolve(n) for n in names if n.split(".")[0] in APPS} - {"", module}
                    out.update(targets)
                    if in_function:
                        late.extend(Late(module, child.lineno, t) for t in sorted(targets))
                inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                visit(child, inner)

        visit(ast.parse(path.read_text()), False)
        edges[module] = out
    return edges, late


def circles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(frozenset(group))
    return found


def _in_chat_core(module: str) -> bool:
    return any(module == c or module.startswith(c + ".") for c in CHAT_CORE)


def test_the_finder_sees_a_circle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(edges) == [frozenset({"a", "b", "c"})]


def test_the_chat_core_is_in_no_circle_and_imports_nothing_late():
    edges, late = graph()
    in_core = [sorted(c) for c in circles(edges) if any(_in_chat_core(m) for m in c)]
    assert in_core == [], f"import circles through the chat core: {in_core}"
    late_in_core = [f"{x.module}:{x.line} imports {x.target}" for x in late if _in_chat_core(x.module)]
    assert late_in_core == []


def test_no_new_import_circle_anywhere():
    edges, _ = graph()
    new = [sorted(c) for c in circles(edges) if c not in KNOWN_CIRCLES]
    assert new == [], f"import circles (imports inside functions count): {new}"


def test_late_imports_do_not_grow():
    _, late = graph()
    assert len(late) <= LATE_IMPORTS_MAX, (
        f"{len(late)} first-party imports are written inside functions (at most {LATE_IMPORTS_MAX}): "
        + ", ".join(f"{x.module}:{x.line}" for x in late)
    )
