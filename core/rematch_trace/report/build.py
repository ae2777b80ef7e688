"""``rematch report``: build or refresh the static site of a data folder.

Layout of the report folder::

    index.html            every session, filters, per-day charts, a search box
    search/NNNN.js        the search box's index: redacted text, loaded as scripts (report/search_site.py)
    sessions/<key>.html   one page per session
    sessions/<key>/*.js   its long sections, loaded when unfolded (report/render.py Parts)
    assets/               the stylesheet, the pages' scripts, Chart.js and its licence
    summaries.json        the cache that makes a rerun incremental

Every file is written beside its target and renamed over it, so a killed
build leaves each file old or new, never half. Pages are rewritten only for
sessions whose stamp (ledger row, trace and events files) changed since the
last build, or when the templates or assets did; pages of sessions gone from
the ledger (or before ``--since``) are removed. The index and the cache are
written last.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from decimal import ROUND_HALF_EVEN, Decimal
from importlib import resources
from pathlib import Path
from typing import Any

import attrs
import orjson

from rematch_trace.report.collect import CACHE_NAME, Entry, collect, read_cache, since_filter, with_json
from rematch_trace.report.figures import figures
from rematch_trace.report.model_names import ModelNames, one_model
from rematch_trace.report.prices import PriceTable
from rematch_trace.report.prices import load as load_prices
from rematch_trace.report.summary import reason_seqs, trace_records
from rematch_trace.store.datafolder import AtomicFile, DataDir, clean_temporaries, write_atomic

#: The files copied into ``assets/``.
ASSETS = ("chart.umd.min.js", "chart.js.LICENSE.md", "report.css", "index.js", "session.js", "tree.js")
#: Bumped when the pages change in a way the templates' bytes do not show.
PAGE_VERSION = 3
#: Characters of one text (a tool's output) a session page holds; ``rematch show --conversation --full`` has all.
PAGE_CHARS = 200_000


@attrs.define
class BuildResult:
    """What a build did."""

    out: Path
    sessions: int
    written: int
    kept: int
    removed: int
    read: int
    problems: list[str]
    #: Pages whose conversation was read from its transcript again (the import stored none of it).
    reread: int = 0


def _package_bytes(folder: str, name: str) -> bytes:
    return (resources.files("rematch_trace.report") / folder / name).read_bytes()


def build_id(prices: str = "") -> str:
    """A digest of the templates, the assets, the code that shapes a page and the prices (``prices``, the
    price table's digest; pages show costs): a change rewrites every page.

    The code is read as it is installed (``summary``, ``figures``, ``render``, ``text``, ``prices``, this
    module), so a new rematch never keeps pages an older one rendered; :data:`PAGE_VERSION` remains for
    anything else.
    """
    h = hashlib.sha256(f"{PAGE_VERSION}\0{prices}".encode())
    package = resources.files("rematch_trace.report")
    templates = package / "templates"
    for item in sorted(templates.iterdir(), key=lambda p: p.name):
        if item.name.endswith(".html"):
            h.update(item.name.encode() + b"\0" + item.read_bytes())
    for name in ASSETS:
        h.update(name.encode() + b"\0" + _package_bytes("static", name))
    for module in ("summary.py", "figures.py", "render.py", "text.py", "prices.py", "build.py", "model_names.py",
                   "search_site.py"):
        h.update(module.encode() + b"\0" + (package / module).read_bytes())
    return h.hexdigest()[:32]


def _private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.is_symlink() or not path.is_dir():
        raise OSError(f"{path} is a symbolic link or not a folder; refusing to write through it")


def _write_if_changed(target: Path, data: bytes) -> bool:
    try:
        if not target.is_symlink() and target.read_bytes() == data:
            return False
    except OSError:
        pass
    write_atomic(target, data)
    return True


def _write_stream(target: Path, chunks: Iterable[str], before_commit: Callable[[], None] | None = None) -> None:
    f = AtomicFile(target)
    buf: list[str] = []
    try:
        # A template yields a string per output node: joined in batches, encoded and written at once.
        for chunk in chunks:
            buf.append(chunk)
            if len(buf) >= 4096:
                # Every printed value went through visible(): a surrogate left would be in the template itself.
                f.write("".join(buf).encode("utf-8", "backslashreplace"))
                buf.clear()
        f.write("".join(buf).encode("utf-8", "backslashreplace"))
        if before_commit is not None:
            before_commit()
        f.commit()
    except BaseException:
        f.discard()
        raise


def _call_ids(trace: Path) -> set[str]:
    return {r["call_id"] for r in trace_records(trace) if r.get("ev") == "tool_result" and isinstance(r.get("call_id"), str)}


def nano(cost: Decimal) -> int:
    """A cost in whole billionths of a dollar: the index's script adds integers, which it does exactly."""
    return int(cost.scaleb(9).to_integral_value(ROUND_HALF_EVEN))


def menu_labels(entries: list[dict[str, Any]]) -> dict[str, str]:
    """The label of each filter-menu and chart-legend value that holds a hidden character (a bidi control,
    a zero-width or tag character, a control): the value with them escaped, one line
    (:func:`~rematch_trace.host.text.one_line`). The value itself stays exact, for the filter to match.
    """
    from rematch_trace.host.text import one_line

    values = {e[k] for e in entries for k in ("h", "m", "r", "d")} | {u[1] for e in entries for u in e["u"]}
    return {v: one_line(v) for v in sorted(v for v in values if isinstance(v, str)) if one_line(v) != v}


def index_entry(j: dict[str, Any], one: Callable[[str], str] = one_model) -> dict[str, Any]:
    """What the index's script draws and filters of one session (its summary's JSON): its facets and per-day
    figures, no text. A usage entry is ``[day, model, tokens, cost in billionths of a dollar, priced tokens,
    turns]``. Models go by one name each (``one``, :func:`~rematch_trace.report.model_names.one_model`); the
    repository facet is the folder when the session has no repository (a menu entry for every session).

    Read from the JSON so that a session whose summary came from the cache is never structured for it.
    """
    return {
        "k": j["key"], "h": j["harness"], "m": one(j.get("model") or ""), "r": j.get("repo") or j.get("cwd") or "",
        "d": j.get("domain") or "", "f": j.get("reasons") or [], "day": j.get("day") or "unknown",
        "daily": [[d["day"], d["inputs"], d["redirects"], d["error_clusters"], d["tool_errors"]]
                  for d in j.get("daily") or []],
        "u": [[u["day"], one(u["model"]), u["tokens"], nano(Decimal(u["cost"])), u["priced_tokens"], u["turns"]]
              for u in j.get("usage") or []],
    }


def grouped_rows(js: list[dict[str, Any]], entries: list[dict[str, Any]], rows: list[str]) -> str:
    """The sessions table's body: per project (repository, else folder) a heading row, then each main
    session's row with the rows of the sessions it started after it, one ``<tbody class="tree">``
    each (report/grouping.py). ``js`` are the sessions' summaries, ``rows`` their rendered rows and
    ``entries`` their :func:`index_entry` objects, which get ``g`` (the key of their main session),
    ``c`` (1: under another session) and ``o`` (1: its parent is named but not here)."""
    from markupsafe import escape

    from rematch_trace.host.text import one_line
    from rematch_trace.report.grouping import projects

    out: list[str] = []
    for p in projects(js):
        under = sum(len(r.walk()) - 1 for r in p.roots)
        more = f" · {under} under them" if under else ""
        out.append(f'    <tbody class="project"><tr class="project"><th colspan="11" scope="rowgroup">'
                   f'<span class="kind">{p.kind}</span> {escape(one_line(p.name))}'
                   f' <span class="muted">{len(p.roots)} session(s){more}</span></th></tr></tbody>\n')
        for root in p.roots:
            g = js[root.index]["key"]
            out.append(f'    <tbody class="tree" data-g="{escape(g)}">\n')
            for node, depth in root.walk():
                entries[node.index]["g"] = g
                if depth:
                    entries[node.index]["c"] = 1
                if node.orphan:
                    entries[node.index]["o"] = 1
                out.append(rows[node.index])
            out.append("    </tbody>\n")
    return "".join(out)


def _entries_and_body(js: list[dict[str, Any]], rows: list[str],
                      one: Callable[[str], str]) -> tuple[list[dict[str, Any]], str]:
    entries = [index_entry(j, one) for j in js]
    return entries, grouped_rows(js, entries, rows)


def _render_session(env: Any, e: Entry, target: Path, since: str | None, prices: PriceTable,
                    conversation: Callable[[str], Mapping[str, Any]], family: dict[str, Any] | None = None) -> str:
    """Render and write one session's page and its folder; where its conversation came from (``store``,
    ``transcript`` or ``trace``: :attr:`rematch_trace.conversation.view.Conversation.read_from`)."""
    # Imported here: a rerun that writes no page never pays for the risk rules or Jinja2.
    from rematch_trace.report.audit import actions, most_severe_first
    from rematch_trace.report.render import flag_reasons_by_seq, timeline

    rows = actions(e.events) if e.events.exists() else []
    call_ids = e.call_ids if e.call_ids is not None else _call_ids(e.trace)
    unanswered = [r for r in rows if r["outcome"] == "unknown" and r["call_id"] not in call_ids]
    risky = [r for r in rows if r["risk_features"]]
    most_severe_first(risky)
    why = flag_reasons_by_seq(e.row)
    seqs = reason_seqs(e.row)
    # The ledger counts the records of each kind; seqs run from 0, so the last is their sum less one.
    last_seq = max(0, sum(v for v in (e.row.get("counts") or {}).values() if isinstance(v, int)) - 1)
    template = env.get_template("session.html")
    from rematch_trace.report.render import Parts

    conv = conversation(e.key)
    parts = Parts()
    folder = target.with_suffix("")

    def write_parts() -> None:
        # Before the page that names them: a killed build leaves the old page with its own files, or the new.
        files = parts.files()
        if files:
            _private_dir(folder)
            for name, blob in files:
                _write_if_changed(folder / name, blob)

    _write_stream(target, template.generate(
        root="../", s=e.summary, row=e.row, last_seq=last_seq, seqs=seqs, risky=risky, actions=len(rows),
        unanswered=unanswered, records=timeline(e.trace, why, prices), since=since,
        family=family or {"parent": None, "children": []}, PAGE_CHARS=PAGE_CHARS, part=parts,
        **conv,
    ), write_parts)
    _prune_parts(folder, {name for name, _ in parts.files()})
    return str(getattr(conv.get("conv"), "read_from", ""))


def _prune_parts(folder: Path, keep: set[str]) -> None:
    """Remove the files of a page's folder its page no longer names (after the page is in place); the
    folder too when it is left empty."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name not in keep:
            (folder / name).unlink(missing_ok=True)
    if not keep:
        try:
            folder.rmdir()
        except OSError:
            pass


class _Env:
    """The Jinja2 environment, made (and Jinja2 imported, the templates compiled) only when a page or the
    index is rendered: a rerun that finds nothing new renders nothing."""

    def __init__(self) -> None:
        self._env: Any = None

    def get_template(self, name: str) -> Any:
        """The template ``name``, compiled on first use."""
        if self._env is None:
            from rematch_trace.report.render import environment

            self._env = environment()
        return self._env.get_template(name)


def _cache_entry(e: Entry, old: dict[str, Any], page: bool, row: str | None, same_build: bool,
                 family: str | None = None) -> dict[str, Any]:
    """A session's entry in the new cache: its stamp, summary, whether its page is current, its index
    row (the one just rendered, else the old one while it still matches), and the digest of the links
    its page has to its parent and children (a child imported later makes the parent's page stale)."""
    entry: dict[str, Any] = {"stamp": e.stamp, "summary": e.json(), "page": page}
    if family is not None:
        entry["family"] = family
    if row is None and same_build and old.get("stamp") == e.stamp and isinstance(old.get("row"), str):
        row = old["row"]
    if row is not None:
        entry["row"] = row
    return entry


#: What the pages' workers render from (set before they fork: they inherit it).
_JOB: list[Any] = []
#: Fewer pages than this are rendered in this process: a pool costs more than it saves.
POOL_MIN = 16


def _render_at(i: int) -> str | OSError:
    """Render the ``i``-th page of :data:`_JOB`: where its conversation came from, or the error met."""
    todo, (env, pages, since, prices, conversation, fams) = _JOB
    e = todo[i]
    try:
        return _render_session(env, e, pages / f"{e.key}.html", since, prices, conversation, fams.get(e.key))
    except OSError as err:
        return OSError(err.errno, err.strerror or str(err))  # plain: it crosses back from a worker


def _render_all(todo: list[Entry], jobs: int, job: tuple[Any, ...]) -> Iterator[str | OSError]:
    """:func:`_render_at` of each page, in order: in ``jobs`` forked workers when there are enough. Each
    page is a function of its session alone, so the site is the same whatever ``jobs`` is."""
    _JOB[:] = [todo, job]
    try:
        if jobs <= 1 or len(todo) < POOL_MIN:
            yield from map(_render_at, range(len(todo)))
            return
        import gc
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        # fork: the workers inherit the sessions, the templates and the plugins; the parent's objects are
        # frozen first, so a worker's collector does not copy their pages.
        gc.freeze()
        done = 0
        try:
            with ProcessPoolExecutor(min(jobs, len(todo)), mp_context=multiprocessing.get_context("fork")) as pool:
                for got in pool.map(_render_at, range(len(todo)), chunksize=4):
                    done += 1
                    yield got
        except BrokenProcessPool:  # a worker that died (killed, out of memory): the rest rendered here
            yield from map(_render_at, range(done, len(todo)))
        finally:
            gc.unfreeze()
    finally:
        _JOB.clear()


def build(data: DataDir, out: Path, since: str | None = None, prices: PriceTable | None = None, *,
          conversation: Callable[[str], Mapping[str, Any]], jobs: int = 1) -> BuildResult:
    """Build or refresh the report of ``data`` in ``out``; see the module's docstring.

    ``prices`` defaults to the shipped table with the data folder's ``prices.yml`` over it.
    ``conversation`` gives what a session page shows of the conversation of a session key (its
    template's ``conv``, ``FOLD_CHARS``, ``FOLD_LINES`` and ``INPUT``):
    :meth:`rematch_trace.conversation.pages.ConversationPages.page`, which reads what the import stored
    of the source. The command hands it in, so the report's room need not import the
    conversation's (which imports the import's, above this one). ``jobs``: worker processes rendering
    the pages (:func:`_render_all`; the site is the same whatever it is).
    """
    if prices is None:
        prices = load_prices(data.root)
    if out.is_symlink():
        raise OSError(f"{out} is a symbolic link; refusing to write through it")
    cache_path = out / CACHE_NAME
    bid = build_id(prices.digest)
    cache, previous_build, previous_index = read_cache(cache_path)
    same_build = previous_build == bid
    got = collect(data, cache, prices)  # before any folder is made: nothing imported means nothing written
    ours = cache_path.exists() or (out / "assets" / "report.css").exists()
    if out.is_dir() and not ours and any(out.iterdir()):
        # Never mix a report into a folder of other files (an index.html of someone else's, say).
        raise OSError(f"{out} is not empty and holds no rematch report; choose an empty or new folder")
    pages = out / "sessions"
    assets = out / "assets"
    for folder in (out, pages, assets):
        _private_dir(folder)
    for folder in (pages, assets):
        clean_temporaries(folder)  # what a killed build left beside its targets
    for name in ("index.html", CACHE_NAME):
        for p in [*out.glob(f".{name}.*.tmp"), *out.glob(f".{name}.*.trash")]:
            p.unlink(missing_ok=True)
    chosen = list(since_filter(got.entries, since))
    env = _Env()
    written = kept = 0
    paged: set[str] = set()
    pages_dir = str(pages)
    from rematch_trace.report.grouping import families

    fams = with_json(chosen, families)
    fam_digest = {k: hashlib.sha256(orjson.dumps(v)).hexdigest()[:16] for k, v in fams.items()}
    todo: list[Entry] = []
    for e in chosen:
        old = cache.get(e.key) or {}
        if same_build and old.get("stamp") == e.stamp and old.get("page") and old.get("family") == fam_digest.get(
                e.key) and os.path.isfile(
                os.path.join(pages_dir, f"{e.key}.html")):
            kept += 1
            paged.add(e.key)
            continue
        todo.append(e)
    reread = 0
    for e, done in zip(todo, _render_all(todo, jobs, (env, pages, since, prices, conversation, fams)), strict=True):
        if isinstance(done, OSError):
            got.problems.append(f"{pages / f'{e.key}.html'}: {done.strerror or done}; page not written")
            continue
        reread += done == "transcript"
        written += 1
        paged.add(e.key)
    for name in ASSETS:
        _write_if_changed(assets / name, _package_bytes("static", name))
    # The index is a function of the build, --since, the chosen sessions' stamps and the problems met:
    # when none changed (a rerun that found nothing new) it is not even rendered.
    index_key = hashlib.sha256(orjson.dumps([bid, since, [e.stamp for e in chosen], got.problems])).hexdigest()[:32]
    rows: dict[str, str] = {}
    if not (index_key == previous_index and (out / "index.html").is_file() and (out / "search").is_dir()):
        # Each session's row of the session table is rendered once per stamp and kept in the cache: a
        # refresh renders the rows of the sessions that changed and joins the others' as they were.
        from markupsafe import Markup as markup

        row_template = env.get_template("row.html")
        for e in chosen:
            old = cache.get(e.key) or {}
            kept_row = old.get("row")
            if same_build and old.get("stamp") == e.stamp and isinstance(kept_row, str):
                rows[e.key] = kept_row
            else:
                rows[e.key] = row_template.render(s=e.summary)
        one = ModelNames(prices)
        fig, data_, body = with_json(chosen, lambda js: (figures(js, prices),
                                                         *_entries_and_body(js, [rows[e.key] for e in chosen], one)))
        from rematch_trace.report.search_site import write_index

        try:
            search = write_index(data, out, [(e.key, e.stamp) for e in chosen])
        except OSError as err:
            got.problems.append(f"{out / 'search'}: {err.strerror or err}; the search box has no index")
            search = None
        index = env.get_template("index.html").render(
            root="", sessions=chosen, rows=markup(body), figures=fig,
            data={"sessions": data_, "labels": menu_labels(data_), "search": search}, since=since,
            problems=got.problems, prices=prices,
        )
        # Held whole (a few bytes a session), so an unchanged index is not rewritten.
        _write_if_changed(out / "index.html", index.encode("utf-8", "backslashreplace"))
    # A rerun that found nothing new would write the cache back byte for byte: it is not even serialized.
    unchanged = (same_build and index_key == previous_index and not rows and len(cache) == len(got.entries)
                 and all(not e.fresh and e.key in cache and cache[e.key].get("stamp") == e.stamp
                         and bool(cache[e.key].get("page")) == (e.key in paged)
                         and cache[e.key].get("family") == fam_digest.get(e.key) for e in got.entries))
    if not unchanged:
        new_cache = {
            "build": bid,
            "index": index_key,
            "sessions": {e.key: _cache_entry(e, cache.get(e.key) or {}, e.key in paged, rows.get(e.key), same_build,
                                             fam_digest.get(e.key))
                         for e in got.entries},
        }
        _write_if_changed(cache_path, orjson.dumps(new_cache, option=orjson.OPT_SORT_KEYS))
    # Last: the index no longer links them, so a killed run leaves no link to a missing page.
    keep = {f"{e.key}.html" for e in chosen}
    removed = 0
    for p in pages.iterdir():
        if p.name.endswith(".html") and p.name not in keep:
            p.unlink()
            removed += 1
        elif f"{p.name}.html" not in keep and p.is_dir() and not p.is_symlink():
            _prune_parts(p, set())  # the folder of a page just removed (or removed by a killed build)
    os.chmod(out, 0o700)
    return BuildResult(out, len(chosen), written, kept, removed, sum(e.fresh for e in got.entries), got.problems,
                       reread)
