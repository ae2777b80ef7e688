"""Sessions grouped as people think of them: each main session with the sessions it started
(subagents, sidechains, compaction runs) under it, and main sessions by project.

Read from summaries' JSON only (``harness``, ``session_id``, ``parent``, ``repo``, ``cwd``): no
trace is opened. A child is linked to the session of the same harness whose id its ``parent``
names. A child whose parent is not among the sessions stays a top-level session, marked
``orphan``; a parent chain that loops (hostile or damaged input: a cycle, never a self-parent,
which :func:`~rematch_trace.report.summary.parent_of` drops) is broken at the session of the loop
that sorts first, which becomes a top-level orphan, so every session is listed exactly once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from rematch_trace.report.text import decimal_text

#: The project of a session with neither a repository nor a folder.
NO_PROJECT = "(no folder)"


class Node:
    """One session in the tree: its index in the input, the sessions it started, whether its parent is missing."""

    # A plain record, not an attrs class: one is made per session on every listing, and attrs would
    # generate (compile) its methods at import, which a listing pays for nothing it uses.
    __slots__ = ("children", "index", "orphan")

    def __init__(self, index: int, children: list[Node] | None = None, orphan: bool = False) -> None:
        self.index = index
        self.children: list[Node] = [] if children is None else children
        self.orphan = orphan

    def __repr__(self) -> str:
        return f"Node(index={self.index!r}, children={self.children!r}, orphan={self.orphan!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Node):
            return NotImplemented
        return (self.index, self.children, self.orphan) == (other.index, other.children, other.orphan)

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value (as attrs made it)

    def walk(self, depth: int = 0) -> list[tuple[Node, int]]:
        """This node and every descendant with its depth (0 for this one), parents before children."""
        if not self.children:  # most sessions: no walk to set up
            return [(self, depth)]
        out: list[tuple[Node, int]] = []
        stack: list[tuple[Node, int]] = [(self, depth)]
        while stack:
            node, d = stack.pop()
            out.append((node, d))
            stack.extend((c, d + 1) for c in reversed(node.children))
        return out


class Project:
    """The top-level sessions of one project (a repository, else a folder), newest first."""

    # A plain record, as :class:`Node` (no generated methods compiled at import).
    __slots__ = ("kind", "name", "roots")

    def __init__(self, name: str, kind: str, roots: list[Node] | None = None) -> None:
        self.name = name
        #: ``repository``, ``folder`` or ``none``.
        self.kind = kind
        self.roots: list[Node] = [] if roots is None else roots

    def __repr__(self) -> str:
        return f"Project(name={self.name!r}, kind={self.kind!r}, roots={self.roots!r})"


def project_of(s: Mapping[str, Any]) -> tuple[str, str]:
    """A session's project and its kind: its repository, else its folder, else :data:`NO_PROJECT`."""
    repo, cwd = s.get("repo"), s.get("cwd")
    if isinstance(repo, str) and repo:
        return repo, "repository"
    if isinstance(cwd, str) and cwd:
        return cwd, "folder"
    return NO_PROJECT, "none"


def _started(s: Mapping[str, Any]) -> int:
    t = s.get("started")
    return t if type(t) is int else 0


def forest(summaries: Sequence[Mapping[str, Any]]) -> list[Node]:
    """The top-level sessions (main ones and orphans), in input order, each with its descendants
    (oldest first under their parent)."""
    by_id: dict[tuple[str, str], int] = {}
    for i, s in enumerate(summaries):
        by_id.setdefault((str(s.get("harness")), str(s.get("session_id"))), i)
    up: list[int | None] = []
    named: list[bool] = []
    for i, s in enumerate(summaries):
        p = s.get("parent")
        j = by_id.get((str(s.get("harness")), p)) if isinstance(p, str) and p else None
        up.append(j if j != i else None)
        named.append(isinstance(p, str) and bool(p))
    # Break each loop once: walk up from every session; a walk that comes back to a session of its
    # own path cuts the loop at its member that sorts first (input order is newest first).
    state = [0] * len(summaries)  # 0 unseen, 1 on the current path, 2 done
    for i in range(len(summaries)):
        path: list[int] = []
        k: int | None = i
        while k is not None and state[k] == 0:
            state[k] = 1
            path.append(k)
            k = up[k]
        if k is not None and state[k] == 1:
            loop = path[path.index(k):]
            up[min(loop)] = None
        for n in path:
            state[n] = 2
    nodes = [Node(i, orphan=named[i] and up[i] is None) for i in range(len(summaries))]
    roots: list[Node] = []
    for i, j in enumerate(up):
        (roots if j is None else nodes[j].children).append(nodes[i])
    for node in nodes:
        if len(node.children) > 1:  # most sessions have none: no sort (and no key function) set up for them
            node.children.sort(key=lambda c: (_started(summaries[c.index]), c.index))
    return roots


def child_keys(summaries: Sequence[Mapping[str, Any]]) -> set[int]:
    """The indexes of the sessions that are under another one (not counted as sessions in totals)."""
    out: set[int] = set()
    for root in forest(summaries):
        out.update(n.index for n, depth in root.walk() if depth)
    return out


def projects(summaries: Sequence[Mapping[str, Any]]) -> list[Project]:
    """The top-level sessions by project (each child follows its main session's project), the project
    with the newest session first, and the sessions of each in input order."""
    by_name: dict[tuple[str, str], Project] = {}
    newest: dict[tuple[str, str], int] = {}
    for root in forest(summaries):
        key = project_of(summaries[root.index])
        project = by_name.get(key)
        if project is None:  # a Project made only for a new one (``setdefault`` would make one a session)
            project = by_name[key] = Project(*key)
        project.roots.append(root)
        # A session alone (most of them) read directly: no walk and no generator per session.
        t = (max(_started(summaries[n.index]) for n, _ in root.walk()) if root.children
             else _started(summaries[root.index]))
        newest[key] = max(newest.get(key, t), t)
    return sorted(by_name.values(), key=lambda p: (-newest[(p.name, p.kind)], p.name, p.kind))


def _cost(value: Any) -> Decimal:
    try:
        d = Decimal(value) if isinstance(value, str) else Decimal(0)
    except InvalidOperation:
        return Decimal(0)
    return d if d.is_finite() else Decimal(0)


def rolled_up(summaries: Sequence[Mapping[str, Any]], root: Node) -> dict[str, Any]:
    """A main session's figures with those of every session under it: sessions, inputs, tool errors,
    tokens, priced tokens and cost (an exact decimal string)."""
    out: dict[str, Any] = {"sessions": 0, "inputs": 0, "tool_errors": 0, "tokens": 0, "priced_tokens": 0}
    cost = Decimal(0)
    for n, _ in root.walk():
        s = summaries[n.index]
        out["sessions"] += 1
        for k in ("inputs", "tool_errors", "tokens", "priced_tokens"):
            v = s.get(k)
            out[k] += v if type(v) is int else 0
        cost += _cost(s.get("cost"))
    out["cost"] = decimal_text(cost)
    return out


def families(summaries: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each session's links for its page, by its ``key``: ``parent`` (``{"key", "session_id"}``, the
    key ``None`` when the parent it names is not among ``summaries``; ``None`` for a main session) and
    ``children`` (``{"key", "session_id", "agent_kind", "started"}`` of each session it started, oldest
    first), as :func:`forest` places them (a loop broken, every session once)."""
    out: dict[str, dict[str, Any]] = {}

    def brief(s: Mapping[str, Any]) -> dict[str, Any]:
        return {"key": s.get("key"), "session_id": s.get("session_id")}

    for root in forest(summaries):
        for node, _ in root.walk():
            s = summaries[node.index]
            fam = out.setdefault(str(s.get("key")), {"parent": None, "children": []})
            if node.orphan:
                fam["parent"] = {"key": None, "session_id": s.get("parent")}
            for c in node.children:
                child = summaries[c.index]
                fam["children"].append({**brief(child), "agent_kind": child.get("agent_kind"),
                                        "started": child.get("started")})
                out.setdefault(str(child.get("key")), {"parent": None, "children": []})["parent"] = brief(s)
    return out
