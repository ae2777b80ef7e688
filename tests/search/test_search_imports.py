"""``rematch search`` answers from its index without loading the plugins or the modules only an import needs
(issue 40: the plugins' imports were most of the command's start-up); not timed (bench/search_latency.py is).
A trace that changed is still indexed first, with the reader of sources at hand (the plugins load
when it reads one)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hostile"))

from hostile_gen import cli_env
from test_search import CORPUS_FILES, first_prompt_word, imported

#: Modules a query answered from the index must not import: the plugin manager and the plugins, attrs,
#: importlib.metadata, OpenSSL's hashlib, and the import's own machinery.
HEAVY = ("pluggy", "attr", "attrs", "cattrs", "importlib.metadata", "hashlib", "decimal",
         "rematch_trace.host.loading", "rematch_trace.host.source", "rematch_trace.importing.worker",
         "rematch_trace.importing.claimed", "rematch_trace.security.redact")
#: Prefixes of the plugins' own packages (the example plugin's too).
PLUGINS = ("rematch_claude_code", "rematch_codex", "rematch_omp", "rematch_gemini_cli", "rematch_opencode",
           "rematch_toy")

_RUN = """
import json, sys
sys.argv = ["rematch", *json.loads(sys.argv[1])]
from rematch_trace.cli import main
code = 0
try:
    main()
except SystemExit as e:
    code = e.code
sys.stdout.flush()
print("\\n" + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def loaded(*args: str) -> tuple[int, str, set[str]]:
    """The exit status, the output and the modules loaded of one ``rematch`` command run in a fresh process."""
    res = subprocess.run([sys.executable, "-c", _RUN, json.dumps(args)], capture_output=True, text=True,
                         env=cli_env(), timeout=120)
    out, _, last = res.stdout.rstrip("\n").rpartition("\n")
    got = json.loads(last)
    return int(got["code"] or 0), out + res.stderr, set(got["modules"])


def heavy(modules: set[str]) -> list[str]:
    """The modules of ``modules`` a query answered from the index must not need."""
    return sorted(m for m in modules if m in HEAVY or m.split(".")[0] in PLUGINS)


@pytest.fixture
def data(corpus_dir: Path, tmp_path: Path) -> Path:
    """One Claude Code session imported (its index made by the import)."""
    imported(corpus_dir / CORPUS_FILES["claude_code"], tmp_path / "data")
    return tmp_path / "data"


def test_a_query_answered_from_the_index_loads_no_plugin_and_no_heavy_module(data: Path) -> None:
    word = first_prompt_word(data)
    for args in ((word,), ("--json", word), ("--harness", "claude_code", "--flag", "none", word),
                 ("--since", "2000-01-01", "--repo", "/", "--kind", "prompt", word)):
        code, out, modules = loaded("search", "--data", str(data), *args)
        assert code == 0, out
        assert word.lower() in out.lower()
        assert heavy(modules) == [], args


def test_an_unknown_harness_is_refused_with_the_installed_names_without_loading_them(data: Path) -> None:
    code, out, modules = loaded("search", "--data", str(data), "--harness", "nosuch", "word")
    assert code == 2
    assert "nosuch" in out and "codex" in out and "claude_code" in out  # codex: installed, no session of it here
    assert heavy(modules) == []


def test_a_changed_trace_is_indexed_first_with_the_source_reader_at_hand(data: Path) -> None:
    trace = next((data / "traces").glob("*.jsonl"))
    records = [orjson.loads(line) for line in trace.read_bytes().splitlines()]
    mark = {"ev": "mark", "seq": max(int(r.get("seq", 0)) for r in records) + 1, "t": records[-1].get("t", 0),
            "class": "note", "note": "zyxwordappended"}
    with trace.open("ab") as f:
        f.write(orjson.dumps(mark) + b"\n")
    code, out, modules = loaded("search", "--data", str(data), "--json", "zyxwordappended")
    assert code == 0, out
    assert [h["kind"] for h in orjson.loads(out)] == ["mark"]
    # The sync may have to read a source: its reader is registered (the plugins load on its first use).
    assert "rematch_trace.importing.search_sources" in modules
    code, out, modules = loaded("search", "--data", str(data), "zyxwordappended")
    assert code == 0, out
    assert heavy(modules) == []
