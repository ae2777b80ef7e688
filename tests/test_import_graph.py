"""The house's import graph: no circle among source files, none among the core's rooms, no arrow up.

Every ``import`` statement of ``core/rematch_trace`` and ``plugins/*/rematch_*`` counts, wherever it
stands (a lazy import inside a function, one under ``TYPE_CHECKING``), and so does
``importlib.import_module`` of a literal name: the graph is read with :mod:`ast`, nothing is imported.
A module's room is its subpackage of the core (``host``, ``store``...; ``errors``, ``testing`` and the
package's own ``__init__`` (``api``) are rooms of one file), or its plugin. :data:`FLOORS` is the order
the code follows (docs/architecture.md draws it): a module imports its own room, or a room on a lower
floor, never a room beside it or above.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "core" / "rematch_trace"

#: The rooms, lowest floor first. A room may import the rooms of the floors below its own; rooms on one
#: floor do not import each other. ``plugins`` stands for each plugin distribution (one room each).
FLOORS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("place",),
    ("host",),
    ("trace",),
    ("security",),
    ("store",),
    ("report", "export"),
    ("live",),
    ("importing",),
    ("conversation", "watch", "testing", "plugins"),
    ("cli", "api"),
)


def _sources() -> Iterator[tuple[str, Path]]:
    """Every source module of the core and the plugins, as (dotted name, file)."""
    packages = [(CORE, "rematch_trace")] + [(p, p.name) for p in sorted((ROOT / "plugins").glob("*/rematch_*"))]
    for folder, name in packages:
        for path in sorted(folder.rglob("*.py")):
            parts = [name, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            yield ".".join(parts), path


def _targets(node: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """The dotted names an import node (or a literal ``importlib.import_module`` call) asks for."""
    if isinstance(node, ast.Import):
        yield from (a.name for a in node.names)
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - node.level + 1]
            origin = ".".join([*base, *([node.module] if node.module else [])])
        else:
            origin = node.module or ""
        # A submodule when there is one, else a name in ``origin`` (the caller climbs to the module).
        yield from (f"{origin}.{alias.name}" for alias in node.names)
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
          and node.func.attr == "import_module" and node.args
          and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        yield node.args[0].value


def import_graph() -> dict[str, set[str]]:
    """Each source module -> the source modules it imports (itself left out)."""
    files = dict(_sources())
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        is_package = path.name == "__init__.py"
        out = graph.setdefault(module, set())
        for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
            for name in _targets(node, module, is_package):
                # ``from a.b import c``: the module a.b.c when it is one, else a.b (and the longest
                # source module a name lies in: ``import a.b.c`` runs a.b.c).
                while name and name not in files:
                    name = name.rpartition(".")[0]
                if name and name != module:
                    out.add(name)
    return graph


def room(module: str) -> str:
    """The room of a module: its subpackage of the core, ``api`` for the core package itself, or its plugin."""
    parts = module.split(".")
    if parts[0] != "rematch_trace":
        return f"plugins:{parts[0]}"
    return parts[1] if len(parts) > 1 else "api"


def floor(room_name: str) -> int:
    """The floor of a room in :data:`FLOORS` (every plugin on the plugins' floor)."""
    key = "plugins" if room_name.startswith("plugins:") else room_name
    for i, rooms in enumerate(FLOORS):
        if key in rooms:
            return i
    raise AssertionError(f"room {room_name!r} has no floor in FLOORS: add it where its imports put it")


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one node (Tarjan's, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.append(member)
                    if member == node:
                        break
                if len(part) > 1:
                    found.append(sorted(part))
    return sorted(found)


GRAPH = import_graph()


def test_the_graph_is_read() -> None:
    """The control: the reading finds the imports it must (a lazy one, a relative one, a type-only one),
    and the circle finder finds a circle."""
    assert "rematch_trace.host.facade" in GRAPH["rematch_trace.importing.discovery"]  # top-level, absolute
    assert "rematch_trace.host.fs" in GRAPH["rematch_trace.host.facade"]  # inside a function
    assert "rematch_omp.translate" in GRAPH["rematch_omp.live"]  # ``from .translate import ...``
    assert "rematch_trace.importing.outcome" in GRAPH["rematch_trace.importing.summary"]  # TYPE_CHECKING
    assert "rematch_trace.host.lazy_hooks" in GRAPH["rematch_claude_code"]  # a package's __init__
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_circle_among_source_files() -> None:
    """No module reaches itself through its imports."""
    assert circles(GRAPH) == []


def test_no_circle_among_the_rooms() -> None:
    """The rooms (the core's subpackages, the plugins) import one another without a circle."""
    rooms: dict[str, set[str]] = {}
    for module, targets in GRAPH.items():
        rooms.setdefault(room(module), set()).update(room(t) for t in targets if room(t) != room(module))
    assert circles(rooms) == []


def built_on() -> set[tuple[str, str]]:
    """(plugin room, plugin room): a plugin whose distribution depends on another plugin's, by its
    ``pyproject.toml`` (rematch-pi on rematch-omp: one session format, read once). Such a plugin may
    import the one it builds on, and only it; the two still make no circle."""
    import re

    packages: dict[str, str] = {}
    needs: dict[str, list[str]] = {}
    for project in sorted((ROOT / "plugins").glob("*/pyproject.toml")):
        text = project.read_text()  # (tomllib is 3.11's; each plugin's project table names these on one line)
        name = re.search(r'^name = "([^"]+)"', text, re.M)
        deps = re.search(r"^dependencies = \[(.*)\]", text, re.M)
        assert name is not None and deps is not None, project
        [package] = [p.name for p in project.parent.glob("rematch_*") if p.is_dir() and not p.name.endswith("-info")]
        packages[name.group(1)] = package
        needs[name.group(1)] = [re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0] for d in re.findall(r'"([^"]+)"', deps.group(1))]
    return {(f"plugins:{packages[n]}", f"plugins:{packages[d]}") for n, ds in needs.items() for d in ds if d in packages}


def test_no_arrow_up_or_across() -> None:
    """Each import goes to the module's own room or to a room on a lower floor of :data:`FLOORS` (or, for
    a plugin, to the plugin its distribution depends on: :func:`built_on`)."""
    declared = built_on()
    assert ("plugins:rematch_pi", "plugins:rematch_omp") in declared  # the control
    wrong = sorted(f"{m} ({room(m)}) -> {t} ({room(t)})"
                   for m, targets in GRAPH.items() for t in targets
                   if room(t) != room(m) and floor(room(t)) >= floor(room(m))
                   and (room(m), room(t)) not in declared)
    assert wrong == []


def test_every_room_has_a_floor() -> None:
    """A new subpackage is placed in :data:`FLOORS` (and docs/architecture.md) before it is used."""
    for module in GRAPH:
        floor(room(module))
