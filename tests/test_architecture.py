"""The rooms of the code (docs/architecture.md) hold: the table there is the rule.

Every import of the project's own packages is read from the source (module level,
``TYPE_CHECKING`` and function level alike). An import the table's "may import" column does
not allow, an import circle between modules, or a folder of robot/ or memory/ that is too big
or says nothing of what it owns fails here, with the import or circle named.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("robot", "memory", "speech", "config", "prompts", "models")
TABLE_HEADING = "## Folders, from the top down"
MAX_FILES = 15


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the project's packages."""
    found = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The project module an import names (``a.b.c`` may be a name inside ``a.b``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {m for a in node.names if a.name.split(".")[0] in PACKAGES and (m := _resolve(a.name))}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:  # ``from memory import admin`` imports the module memory.admin
                full = f"{node.module}.{alias.name}"
                out.add(full if full in MODULES else _resolve(node.module) or node.module)
    return out


GRAPH = {name: _imports(path) - {name} for name, path in MODULES.items()}


def _folder(module: str) -> str:
    return MODULES[module].parent.relative_to(REPO).as_posix() + "/"


def _table() -> list[tuple[str, list[str]]]:
    """(folder, folders it may import), top row first, from docs/architecture.md."""
    text = (REPO / "docs" / "architecture.md").read_text()
    section = text.split(TABLE_HEADING, 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            rows.append((cells[0].strip("`"), re.findall(r"`([^`]+/)`", cells[2])))
    return rows


TABLE = _table()
ROWS = [folder for folder, _ in TABLE]


def _row_of(folder: str) -> str:
    """The table's row for a folder: its own, or its nearest parent's."""
    best = max((r for r in ROWS if folder.startswith(r)), key=len, default=None)
    assert best is not None, f"{folder} is in no row of docs/architecture.md"
    return best


def test_the_table_names_every_folder_once_and_is_layered():
    assert len(ROWS) == len(set(ROWS)) and "robot/dialogue/" in ROWS and "memory/stores/" in ROWS
    for i, (folder, allowed) in enumerate(TABLE):
        for target in allowed:
            assert any(target.startswith(r) or r.startswith(target) for r in ROWS), f"{folder}: unknown {target}"
            below = [r for r in ROWS[i + 1:] if r.startswith(target) or target.startswith(r)]
            assert below, f"{folder} may import {target}, which is not below it in the table"


def test_every_import_is_one_the_table_allows():
    allowed = dict(TABLE)
    wrong = []
    for module, targets in sorted(GRAPH.items()):
        row = _row_of(_folder(module))
        for target in sorted(targets):
            folder = _folder(target)
            if _row_of(folder) == row or any(folder.startswith(a) for a in allowed[row]):
                continue
            wrong.append(f"{module} imports {target} ({row} may import {', '.join(allowed[row]) or 'nothing'})")
    assert not wrong, "imports against docs/architecture.md:\n" + "\n".join(wrong)


def _circles() -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    return found


def test_no_import_circle_anywhere():
    assert not _circles(), f"import circles: {_circles()}"


@pytest.mark.parametrize("top", ["robot", "memory"])
def test_every_folder_is_small_and_says_what_it_owns(top):
    for folder in [REPO / top, *(p for p in (REPO / top).rglob("*") if p.is_dir())]:
        if folder.name in ("__pycache__", "static"):
            continue
        files = [p for p in folder.iterdir() if p.is_file() and p.suffix == ".py"]
        assert len(files) <= MAX_FILES, f"{folder.relative_to(REPO)}: {len(files)} files"
        init = folder / "__init__.py"
        assert init.exists() and ast.get_docstring(ast.parse(init.read_text())), \
            f"{folder.relative_to(REPO)} has no docstring saying what it owns"


def test_the_check_sees_a_circle_and_a_wrong_import():
    """The check itself: an import added against the table would be caught."""
    GRAPH["memory.core.base"].add("memory.dual_store.memory")
    try:
        assert any("memory.core.base" in c for c in _circles())
        with pytest.raises(AssertionError, match="memory.core.base imports memory.dual_store.memory"):
            test_every_import_is_one_the_table_allows()
    finally:
        GRAPH["memory.core.base"].discard("memory.dual_store.memory")
