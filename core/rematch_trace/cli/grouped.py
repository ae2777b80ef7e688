"""``rematch sessions`` and ``stats`` over grouped sessions: a filter selects whole sessions (a main
session with everything it started), and the listing shows them by project (report/grouping.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rematch_trace.report.collect import Entry
from rematch_trace.report.grouping import Node, forest, project_of, projects, rolled_up


def whole(entries: list[Entry], matched: list[Entry]) -> list[Entry]:
    """Of ``entries`` (every session, newest first), the sessions of each tree with a member in
    ``matched``: a main session is chosen with everything under it when it or any of them matches
    (a filter is about sessions as people think of them). Order kept."""
    if len(matched) == len(entries):
        return list(entries)
    js = [e.json() for e in entries]
    hit = {id(e) for e in matched}
    keep: set[int] = set()
    for root in forest(js):
        members = [n.index for n, _ in root.walk()]
        if any(id(entries[i]) in hit for i in members):
            keep.update(members)
    return [e for i, e in enumerate(entries) if i in keep]


def _children(js: list[dict[str, Any]], roots: list[Node]) -> dict[int, tuple[list[str], bool, str]]:
    """Per session index: the ids of the sessions directly under it, whether it is an orphan, its project."""
    out: dict[int, tuple[list[str], bool, str]] = {}
    for root in roots:
        project = project_of(js[root.index])[0]
        for n, _ in root.walk():
            out[n.index] = ([str(js[c.index].get("session_id")) for c in n.children], n.orphan, project)
    return out


def with_links(entries: list[Entry], one: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Each session's summary JSON (newest first) with ``children`` (the ids directly under it),
    ``orphan`` (its parent is named but not here), ``project``, for a top-level one ``rolled_up`` (its
    figures with everything under it) and, given ``one``, ``model_folded`` (``one[model]``, the name the
    table shows; ``model`` stays the trace's)."""
    js = [e.json() for e in entries]
    roots = forest(js)
    links = _children(js, roots)
    tops = {r.index: rolled_up(js, r) for r in roots}
    out = []
    for i, (j, e) in enumerate(zip(js, entries, strict=True)):
        children, orphan, project = links[i]
        extra: dict[str, Any] = {"trace": e.trace_file, "children": children, "orphan": orphan, "project": project}
        if one is not None:
            extra["model_folded"] = one[m] if (m := j.get("model")) else None
        if i in tops:
            extra["rolled_up"] = tops[i]
        out.append(dict(j, **extra))
    return out


def in_project(entries: list[Entry], part: str | None) -> list[Entry]:
    """The sessions whose main session's project (repository, else folder) contains ``part``
    (case-insensitively); all of them when ``part`` is ``None``."""
    if part is None:
        return entries
    js = [e.json() for e in entries]
    keep: set[int] = set()
    for root in forest(js):
        if part.lower() in project_of(js[root.index])[0].lower():
            keep.update(n.index for n, _ in root.walk())
    return [e for i, e in enumerate(entries) if i in keep]


def grouped_lines(entries: list[Entry], one: Mapping[str, str]) -> list[str]:
    """The sessions by project, each main session followed by the sessions under it, indented; each
    session's model by its one name, ``one[model]`` (:class:`~rematch_trace.report.model_names.ModelNames`)."""
    from rematch_trace.cli.listing import table
    from rematch_trace.host.text import one_line
    from rematch_trace.report.text import clip, when

    js = [e.json() for e in entries]
    header = ["started (UTC)", "harness", "session", "model", "inputs", "tool err", "redirects", "repository / folder"]
    rows: list[list[str]] = [header]
    heads: dict[int, str] = {}  # row number -> the project line printed above it
    mains = subs = 0
    for p in projects(js):
        trees = [r.walk() for r in p.roots]
        n_sessions = sum(map(len, trees))
        heads[len(rows)] = f"== {clip(one_line(p.name), 120)} ({p.kind}; {len(p.roots)} main session(s), {n_sessions} in all)"
        for members in trees:
            for node, depth in members:
                s = js[node.index].get
                mains += depth == 0
                subs += depth > 0
                sid = str(s("session_id"))
                if depth:
                    sid = "  " * (depth - 1) + "└ " + sid
                if node.orphan:
                    sid += " (orphan: parent not imported)"
                elif not depth and node.children:
                    sid += f" (+{len(members) - 1} under it)"
                rows.append([when(s("started"), "%Y-%m-%d %H:%M"), clip(s("harness"), 40), clip(sid, 200),
                             clip(one[m] if (m := s("model")) else "-", 40), str(s("inputs")),
                             str(s("tool_errors")), str(s("redirects")), clip(s("repo") or s("cwd") or "-", 80)])
    lines = table(rows, {4, 5, 6})
    out = ["  " + lines[0]]
    for i, line in enumerate(lines[1:], start=1):
        if i in heads:
            out.append(heads[i])
        out.append("  " + line)
    under = f", and {subs} under them (subagents, sidechains, compaction runs; --flat lists each alone)" if subs else ""
    out.append(f"{mains} session(s){under}")
    return out
