"""Reading the report's pages as a browser's parser would: tags, attributes, links, the embedded data."""

from __future__ import annotations

import base64
import html
import json
import re
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

#: The only scripts a page may load.
ALLOWED_SCRIPTS = {"assets/chart.umd.min.js", "assets/index.js", "assets/session.js", "assets/tree.js"}


class Page(HTMLParser):
    """Every start tag with its attributes, the ids, and the text of ``<script type=application/json>``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.ids: set[str] = set()
        self.json_text: list[str] = []
        self._in_json = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append((tag, a))
        if a.get("id"):
            self.ids.add(str(a["id"]))
        self._in_json = tag == "script" and a.get("type") == "application/json"

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_json = False

    def handle_data(self, data: str) -> None:
        if self._in_json:
            self.json_text.append(data)


_LAZY = re.compile(r'<div class="lazy" data-c="(\d+)" data-i="(\d+)"></div>')
_PART = re.compile(r'rematchPart\("([0-9a-f]+\.js)","([A-Za-z0-9+/=]*)"\);\n')
_PARTS = re.compile(r'<script type="application/json" id="parts" data-dir="([^"]*)">(.*?)</script>', re.S)


def sections(path: Path) -> list[list[str]]:
    """The long sections of a session page, chunk by chunk, as its folder holds them (what session.js loads)."""
    m = _PARTS.search(path.read_text("utf-8"))
    if m is None:
        return []
    out = []
    for name in json.loads(html.unescape(m.group(2))):
        got = _PART.fullmatch((path.parent / html.unescape(m.group(1)) / name).read_text("ascii"))
        assert got is not None and got.group(1) == name, name
        out.append(json.loads(zlib.decompress(base64.b64decode(got.group(2)))))
    return out


def page_text(path: Path) -> str:
    """A page's HTML with every section it loads on demand in place (what a reader who unfolds all sees)."""
    text = path.read_text("utf-8")
    if path.parent.name != "sessions":
        return text
    parts = sections(path)
    for _ in range(8):  # a section may hold more (a nested conversation's long outputs)
        text, n = _LAZY.subn(lambda m: parts[int(m.group(1))][int(m.group(2))], text)
        if not n:
            break
    return text


def search_entries(path: Path) -> list[Any]:
    """The session entries of one of the report's search files (search/NNNN.js: deflated, in base64)."""
    from rematch_trace.report.search_site import shard_entries

    return shard_entries(path.read_bytes())


def readable_bytes(path: Path) -> bytes:
    """A file of the site as a reader gets it: a session page with its sections loaded on demand in place, a
    search file's entries inflated (as JSON, every character as itself), anything else as it is."""
    if path.suffix == ".html":
        return page_text(path).encode()
    if path.parent.name == "search" and path.suffix == ".js":
        return json.dumps(search_entries(path), ensure_ascii=False).encode("utf-8", "surrogatepass")
    return path.read_bytes()


def parse(path: Path) -> Page:
    """The parsed page (its sections loaded on demand in place)."""
    p = Page()
    p.feed(page_text(path))
    p.close()
    return p


def unsafe_markup(page: Page) -> list[str]:
    """What in a page could run script or leave it: any script but ours, event handler attributes,
    ``javascript:`` URLs, frames, objects, forms, a base or a refresh; empty when none."""
    found = []
    for tag, a in page.tags:
        if tag == "script":
            src = a.get("src")
            if a.get("type") == "application/json" and src is None:
                continue
            if src is None or src.replace("../", "") not in ALLOWED_SCRIPTS:
                found.append(f"script {a}")
        for name, value in a.items():
            if name.startswith("on"):
                found.append(f"{tag} handler {name}={value!r}")
            if name in ("href", "src", "action", "formaction", "srcdoc", "data") and value and (
                    value.strip().lower().startswith(("javascript:", "data:text/html")) or name == "srcdoc"):
                found.append(f"{tag} {name}={value!r}")
        if tag in ("iframe", "frame", "object", "embed", "form", "base", "style", "svg", "img", "math"):
            found.append(f"tag {tag}")
        if tag == "meta" and (a.get("http-equiv") or "").lower() == "refresh":
            found.append("meta refresh")
    return found


def embedded(page: Page) -> Any:
    """The JSON the page embeds for its script."""
    return json.loads("".join(page.json_text))


def broken_links(path: Path, page: Page, pages: dict[Path, Page]) -> list[str]:
    """Links of ``page`` (at ``path``) whose file is missing or whose fragment names no element."""
    bad = []
    for tag, a in page.tags:
        for attr in ("href", "src"):
            url = a.get(attr)
            if tag not in ("a", "link", "script") or url is None:
                continue
            parts = urlsplit(url)
            rel = set((a.get("rel") or "").split())
            if (tag == "a" and parts.scheme in ("http", "https", "mailto") and {"noopener", "noreferrer"} <= rel):
                continue  # a link the assistant's text holds (report/markdown.py): no request unless followed
            if parts.scheme or parts.netloc:
                bad.append(f"{url}: leaves the report")
                continue
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path.resolve()
            if not target.is_file():
                bad.append(f"{url}: no such file")
                continue
            if parts.fragment:
                other = pages.get(target) or parse(target)
                if parts.fragment not in other.ids:
                    bad.append(f"{url}: no element #{parts.fragment}")
    return bad


class Watched:
    """A page whose dialogs, page errors and console errors are recorded."""

    def __init__(self, browser: Any) -> None:
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("dialog", self._dialog)
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on("console", lambda m: self.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)

    def _dialog(self, d: Any) -> None:
        self.dialogs.append(d.message)
        d.dismiss()

    def open(self, path: Path) -> Any:
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_load_state("load")
        self.page.wait_for_timeout(300)  # let a deferred payload (an onload, an image error) fire if it can
        return self.page

    def clean(self) -> None:
        assert self.dialogs == [], f"transcript script ran: {self.dialogs}"
        assert self.errors == []
