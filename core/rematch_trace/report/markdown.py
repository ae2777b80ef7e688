"""The assistant's text as the page shows it: its Markdown rendered, safely; a file edit as a unified diff.

Transcripts are hostile input, so the renderer (markdown-it-py, CommonMark) is configured to make nothing
but plain markup: raw HTML is off (a ``<script>`` in the text is shown as text), images are off (an image
would be a network request, which no page makes: its alt text is shown), and a link is kept only when it
is ``http:``, ``https:`` or ``mailto:`` (anything else, ``javascript:`` and ``data:`` included, stays
literal text), opened with ``rel="noopener noreferrer nofollow"``. Hidden characters are escaped first,
as everywhere on the pages (:func:`~rematch_trace.report.text.visible`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from rematch_trace.report.text import visible

#: Link schemes a rendered link may have.
SAFE_SCHEMES = ("http:", "https:", "mailto:")
#: Pairs of keys a file edit's input holds its old and new text under (Claude Code, omp/pi, Gemini CLI, opencode).
EDIT_KEYS = (("old_string", "new_string"), ("oldText", "newText"), ("old_str", "new_str"), ("oldString", "newString"))
#: Keys a file edit's input names its file under.
PATH_KEYS = ("file_path", "path", "filePath", "absolute_path")
#: Characters of one text rendered as Markdown at most: markdown-it-py reads about 0.1-0.2 MB a second (and
#: a hostile text of brackets or emphasis marks about 0.02-0.04 MB), so a longer text is shown as it is,
#: folded, as before; most answers are far shorter.
MARKDOWN_CHARS = 16_000
#: Lines of one diff shown at most (a page holds what a person reads).
DIFF_LINES = 2_000

_MD: Any = None


def _renderer() -> Any:
    """The one markdown-it instance (made on first use: a rerun that renders no page never imports it)."""
    global _MD
    if _MD is None:
        from markdown_it import MarkdownIt

        md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
        md.disable("image")
        md.validateLink = lambda url: url.strip().lower().startswith(SAFE_SCHEMES)  # type: ignore[method-assign]

        def link_open(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
            tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
            return str(renderer.renderToken(tokens, idx, options, env))

        md.add_render_rule("link_open", link_open)
        _MD = md
    return _MD


#: A character that may start Markdown anywhere in a line (emphasis, code, links, HTML, entities, escapes).
_INLINE = re.compile(r"[`*_\[\]<>&\\]")
#: A line that Markdown may read as a block of its own (a heading, list, quote, fence, rule, code or
#: setext underline), or whose end is a hard break.
_BLOCK = re.compile(r"^(?:[ \t]|[-+=#>~]|\d+[.)])|[ \t]$", re.M)
#: Whitespace but the space and the newline (a tab, a no-break space: the parser trims some at a
#: paragraph's ends).
_SPACE = re.compile(r"[^\S \n]")


def _plain(text: str) -> str | None:
    """The HTML markdown-it makes of ``text`` when it is plain prose, without running the parser (most of
    the assistant's answers are: the parser is most of a page's time); ``None`` when it may hold Markdown.

    Plain: no character that starts inline Markdown, no line that may start a block or ends in a hard
    break, no whitespace but spaces and newlines. Then CommonMark makes each run of lines between blank lines a paragraph, its lines as they
    are, ``"`` escaped as markdown-it escapes it (tested against markdown-it-py on real answers).
    """
    if _INLINE.search(text) or _BLOCK.search(text) or _SPACE.search(text):
        return None
    paragraphs = [p for p in re.split(r"\n(?:[ \t]*\n)+", text.strip("\n")) if p]
    return "".join("<p>" + p.replace('"', "&quot;") + "</p>\n" for p in paragraphs)


def markdown(text: str | None) -> Markup:
    """``text`` (Markdown) as safe HTML: see the module docstring."""
    if not text:
        return Markup("")
    if len(text) > MARKDOWN_CHARS:
        return Markup('<pre class="said">{}</pre>').format(visible(text))
    shown = visible(text)
    plain = _plain(shown)
    if plain is not None:
        # Safe: no <, > or & in it (checked), and " escaped.
        return Markup(plain)
    # Safe: raw HTML is off and the renderer escapes every text; links are checked (see above).
    return Markup(_renderer().render(shown))


def _edits(value: Mapping[str, Any]) -> list[tuple[str, str]] | None:
    """The (old, new) texts of a file edit's input, or ``None`` when it is not one."""
    for old_key, new_key in EDIT_KEYS:
        old, new = value.get(old_key), value.get(new_key)
        if isinstance(old, str) and isinstance(new, str):
            return [(old, new)]
    many = value.get("edits")
    if isinstance(many, list) and many and all(isinstance(e, Mapping) for e in many):
        found = [_edits(e) for e in many]
        if all(f is not None for f in found):
            return [pair for f in found if f is not None for pair in f]
    return None


def edit_diff(value: Any) -> list[tuple[str, str]] | None:
    """A file edit's input (``old_string``/``new_string`` and their kin, or several ``edits``) as unified diff
    lines, each ``(kind, text)`` with kind ``head``, ``hunk``, ``add``, ``del`` or ``ctx``; ``None`` when the
    input is not an edit (it is then shown as it is)."""
    if not isinstance(value, Mapping):
        return None
    pairs = _edits(value)
    if pairs is None:
        return None
    path = next((value[k] for k in PATH_KEYS if isinstance(value.get(k), str)), "file")
    out: list[tuple[str, str]] = []
    for old, new in pairs:
        lines = difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{path}", f"b/{path}", lineterm="", n=3)
        for line in lines:
            if line.startswith(("---", "+++")):
                if out and out[0][0] == "head" and any(k == "head" and t == line for k, t in out[:2]):
                    continue  # one header for every edit of the same file
                kind = "head"
            elif line.startswith("@@"):
                kind = "hunk"
            elif line.startswith("+"):
                kind = "add"
            elif line.startswith("-"):
                kind = "del"
            else:
                kind = "ctx"
            out.append((kind, line))
            if len(out) >= DIFF_LINES:
                out.append(("hunk", "… the diff goes on: rematch show SESSION --conversation --full shows the edit"))
                return out
    return out
