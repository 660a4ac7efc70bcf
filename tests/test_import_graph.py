"""The first-party import graph (crows_site, flock, trust, nests), imports written inside
functions included (STYLE.md, "Saying is not reacting"): a late import is a smell, not a
fix for a circle (docs/CHATROOM.md, "The import rule").

- No circle anywhere: one fails naming its modules.
- The chat core (nests.actions.chat, nests.actions.messages, the chat tasks, the queries it
  reads) writes no import inside a function.
- In the whole code, no more late imports than LATE_IMPORTS_MAX, and each says why it must
  be late in a comment on its line or the line above (Django's app registry, scikit-learn
  that `import flock.jev` must not load, settings that load before django.db). Imports
  under `if TYPE_CHECKING:` are for the type checker and never run, so they are not
  edges; an import of another library is not in the graph.
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
# Late first-party imports in the whole codebase today (at most 10, lower it as they go):
# each AppConfig's one (its wiring module imports models: Django's app registry must be
# ready first), flock.jev's doors to its scikit-learn model, and flock.db in the settings.
LATE_IMPORTS_MAX = 9


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


def test_the_chat_core_imports_nothing_late():
    _, late = graph()
    late_in_core = [f"{x.module}:{x.line} imports {x.target}" for x in late if _in_chat_core(x.module)]
    assert late_in_core == []


def test_no_import_circle_anywhere():
    edges, _ = graph()
    found = [sorted(c) for c in circles(edges)]
    assert found == [], f"import circles (imports inside functions count): {found}"


def test_late_imports_do_not_grow():
    _, late = graph()
    assert len(late) <= LATE_IMPORTS_MAX, (
        f"{len(late)} first-party imports are written inside functions (at most {LATE_IMPORTS_MAX}): "
        + ", ".join(f"{x.module}:{x.line}" for x in late)
    )


def _says_why(path: Path, line: int) -> bool:
    lines = path.read_text().splitlines()
    return "#" in lines[line - 1] or lines[line - 2].strip().startswith("#")


def test_every_late_import_says_why_it_must_be_late():
    _, late = graph()
    sources = _sources()
    silent = sorted({f"{x.module}:{x.line}" for x in late if not _says_why(sources[x.module], x.line)})
    assert silent == [], f"late imports with no comment (on the line or above) saying why: {silent}"


def test_a_late_import_without_a_comment_is_seen(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    # Late: why.\n    import a\n\n    import b\n")
    assert _says_why(source, 3) and not _says_why(source, 5)
