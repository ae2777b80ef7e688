"""What compiling the import's hot path with mypyc gains: built here from the same sources, measured against them.

    python bench/mypyc_build.py build --keep DIR            # copy the packages to DIR, compile MODULES there
    python bench/mypyc_build.py same DIR CORPUS             # pure and compiled imports of CORPUS: same bytes?
    python bench/mypyc_build.py callgrind DIR CORPUS        # instructions of each (every process)
    python bench/mypyc_build.py pairs DIR CORPUS --pairs 5  # CPU seconds, pure and compiled in turn
    python bench/mypyc_build.py floor DIR CORPUS            # the parse, bench/python_floor.py, then pairs of
                                                            # each stage: read, read + translate (bench/floor.py),
                                                            # the import alone (bench/no_follow.py), the import

``build`` copies ``core/rematch_trace`` and the Claude Code plugin's package
from this checkout into DIR and compiles the per-record modules of the import
there (``MODULES``, found by cProfile of a one-job import of real Claude Code
sessions) with mypyc, the compiler that ships with mypy (``mypy`` of the
test extra; a C compiler and the Python headers). The sources stay the only
truth: nothing generated is written into the checkout, and nothing is
installed. A run with DIR first on ``PYTHONPATH`` imports the compiled
modules (an extension module beside its ``.py`` is found first) and the
copied ``.py`` for the rest; without it, the editable installs' sources.

mypyc stops the build at a module it rejects (its message is printed).
The modules of the hot path it cannot compile as they are, or that do not
work once compiled, are in ``SKIPPED`` with the reason, and stay Python.
``.pyc`` files are written for both trees first and ``PYTHONDONTWRITEBYTECODE``
is dropped for the runs, so neither side parses sources at start-up.

``MYPYC_OPT_LEVEL=0`` builds in about half the time (for checking outputs;
measure the default, 3). A build of ``MODULES`` takes 6-9 minutes of wall time
on the shared 2-core machine (one C compiler job, ``nice``).

``same`` compares what both imports of CORPUS wrote: every file of
``traces/``, ``events/`` and ``pending/``, the ledger's session rows and the
search index's rows (``search.sqlite``: traces, turns, calls, spans, sources
and the indexed text), with the data folder's own path and the inode and
mtime columns left out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from compiled import PACKAGES, byte_compile, check_loaded, compiled_env, pure_env  # noqa: E402
from run import measure_cpu, parse_only  # noqa: E402

# The per-record modules of a cold import (own time in cProfile of a one-job
# import of 64 MB of bench/real_copies.py's archive, largest first), those
# mypyc compiles.
MODULES = [
    "rematch_trace/security/redact.py",
    "rematch_claude_code/translate.py",
    "rematch_trace/security/events.py",
    "rematch_trace/security/shell.py",
    "rematch_trace/trace/synth.py",
    "rematch_claude_code/conversation.py",
    "rematch_trace/security/risk.py",
    "rematch_trace/store/search_rows.py",
    "rematch_trace/host/ids.py",
    "rematch_trace/store/search_index.py",
    "rematch_trace/importing/reader.py",
    "rematch_trace/host/timestamps.py",
    "rematch_trace/security/scan.py",
    "rematch_claude_code/reader.py",
    "rematch_trace/security/strings.py",
    "rematch_trace/importing/search_sources.py",
    "rematch_trace/trace/canonical.py",
    "rematch_trace/security/fingerprint.py",
    "rematch_trace/report/stored.py",
    "rematch_trace/importing/worker.py",
    "rematch_trace/trace/flags.py",
    "rematch_trace/host/casefold.py",
    "rematch_trace/trace/lines.py",
    "rematch_trace/trace/truncate.py",
    "rematch_trace/importing/batch.py",
    "rematch_trace/trace/prelabel.py",
    "rematch_trace/store/ledger.py",
    "rematch_trace/trace/turns.py",
    "rematch_trace/trace/fold.py",
    "rematch_trace/importing/consumers.py",
    "rematch_claude_code/actions.py",
    "rematch_claude_code/usertext.py",
    "rematch_trace/host/sealed.py",
    "rematch_trace/security/shell_risk.py",
]
# Modules of the hot path mypyc cannot compile as they are, and why (left as Python).
SKIPPED: dict[str, str] = {
    "rematch_trace/host/facade.py": "holds pluggy hook implementations (pluggy does not find them once compiled)",
    "rematch_trace/host/text.py": "lone surrogates in a string literal (the hidden characters' class), which mypyc refuses",
    "rematch_trace/importing/source_import.py": "a `continue` inside a `with` block (try/finally), unimplemented in mypyc",
    "rematch_trace/report/prices.py": "a class defined inside a function (the YAML loader), unsupported by mypyc",
    "rematch_trace/store/datafolder.py": "an attribute `_thread` becomes the C field `__thread`, a C keyword (mypyc bug)",
    # mypyc gives a non-native (attrs) class the annotation `type` for every hint that is a union,
    # a Literal or a generic alias, and these two read their classes' annotations at run time.
    "rematch_trace/host/vocab.py": "the neutral records' field check reads their type hints (typing.get_type_hints)",
    "rematch_trace/report/summary.py": "cattrs (un)structures the stored summaries from their classes' type hints",
}

# The project's mypy settings (pyproject.toml), for the copied packages.
_CONFIG = """\
[mypy]
strict = True
warn_unused_ignores = False
[mypy-ijson.*,rfc8785.*,zstandard.*,dask.*,distributed.*,fsspec.*]
ignore_missing_imports = True
[mypy-rematch_trace.host.hookspecs]
disable_error_code = empty-body
[mypy-rematch_trace.importing.cluster]
disallow_untyped_calls = False
"""


# The setup script mypyc's own command line writes, with one addition: mypyc knows attrs' classic
# API (``attr.ib``) but not ``attrs.field``, whose call it then coerces to the field's declared
# type at class creation (``TypeError: list object expected; got attr._make._CountingAttr``);
# the addition treats ``attrs.field`` as it treats ``attr.ib``.
_SETUP = """\
from setuptools import setup
from mypyc.build import mypycify
from mypyc.irbuild import specialize

specialize.specialize_function("attrs.field")(specialize.translate_dataclasses_field_call)
setup(name="rematch_mypyc", ext_modules=mypycify({args!r}, opt_level={opt!r}, multi_file=True))
"""


def build(dest: Path, modules: list[str]) -> tuple[float, str]:
    """Copy the packages into ``dest`` and compile ``modules`` there; (wall seconds, mypyc's output)."""
    for name, src in PACKAGES.items():
        shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"))
    (dest / "mypy.ini").write_text(_CONFIG)
    (dest / "setup_mypyc.py").write_text(_SETUP.format(args=["--config-file", "mypy.ini", *modules],
                                                          opt=os.environ.get("MYPYC_OPT_LEVEL", "3")))
    started = time.perf_counter()
    res = subprocess.run([sys.executable, "setup_mypyc.py", "build_ext", "--inplace"],
                         cwd=dest, capture_output=True, text=True)
    log = res.stdout + res.stderr
    if res.returncode != 0:
        sys.exit(f"mypyc failed ({res.returncode}):\n{log[-6000:]}")
    return time.perf_counter() - started, log


def _dump_db(path: Path, queries: list[str], out: str) -> bytes:
    """The rows of ``queries`` on the database at ``path``, as bytes, the data folder's path replaced.

    A stored summary's ``basis`` (the sizes and mtimes of the outputs it was made from) is left
    out: it differs between any two imports.
    """
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    lines = []
    try:
        for q in queries:
            for row in con.execute(q):
                d = dict(row)
                if isinstance(d.get("summary"), str):
                    summary = json.loads(d["summary"])
                    summary.pop("basis", None)
                    d["summary"] = summary
                lines.append(repr(d).replace(out, "<out>").encode() + b"\n")
    finally:
        con.close()
    return b"".join(lines)


LEDGER = ["SELECT * FROM sessions ORDER BY harness, session_id"]
SEARCH = [
    "SELECT key, end_off, started, session_id FROM traces ORDER BY key",
    "SELECT * FROM turns ORDER BY key, seq",
    "SELECT * FROM calls ORDER BY key, call_id",
    "SELECT key, off, len, digest, src FROM spans ORDER BY key, off, len, digest",
    "SELECT path, size, end_off, streams FROM sources ORDER BY path",
    "SELECT c0, c1, c2, c3 FROM text_content ORDER BY c0, c1, c2, c3",
]


def digests(out: Path) -> dict[str, str]:
    """A hash of each kind of output of the data folder ``out``."""
    result: dict[str, str] = {}
    for sub in ("traces", "events", "pending"):
        h = hashlib.sha256()
        for p in sorted((out / sub).rglob("*")) if (out / sub).exists() else []:
            if p.is_file():
                h.update(str(p.relative_to(out)).encode() + b"\0" + p.read_bytes() + b"\0")
        result[sub] = h.hexdigest()[:16]
    result["ledger sessions"] = hashlib.sha256(_dump_db(out / "ledger.sqlite", LEDGER, str(out))).hexdigest()[:16]
    result["search rows"] = hashlib.sha256(_dump_db(out / "search.sqlite", SEARCH, str(out))).hexdigest()[:16]
    return result


def import_cmd(corpus: Path, out: Path, jobs: int) -> list[str]:
    """A cold ``rematch import`` of ``corpus`` into ``out``."""
    return [sys.executable, "-m", "rematch_trace.cli", "import", str(corpus), "--out", str(out),
            "--jobs", str(jobs), "-q"]


def _envs(folder: Path) -> tuple[dict[str, str], dict[str, str]]:
    byte_compile(ROOT / "core", ROOT / "plugins", folder)
    fast = compiled_env(folder)
    check_loaded(fast, compiled_modules(folder))
    return pure_env(), fast


def compiled_modules(folder: Path) -> list[str]:
    """The modules of ``folder`` with an extension module beside them."""
    return sorted(str(p.relative_to(folder).with_name(p.name.split(".")[0] + ".py"))
                  for name in PACKAGES for p in (folder / name).rglob("*.so"))


def instructions(cmd: list[str], env: dict[str, str], prof: Path) -> float:
    """Millions of instructions of ``cmd`` under callgrind, its children included."""
    run = ["valgrind", "--tool=callgrind", "--trace-children=yes", f"--callgrind-out-file={prof}.%p", *cmd]
    res = subprocess.run(run, env=env, capture_output=True, text=True)
    if res.returncode not in (0, 1):
        sys.exit(f"callgrind run failed ({res.returncode}): {res.stderr[-2000:]}")
    total = 0
    for p in prof.parent.glob(prof.name + ".*"):
        for line in p.read_text(errors="replace").splitlines():
            if line.startswith(("summary:", "totals:")):
                total += int(line.split()[1])
                break
    return total / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["build", "same", "callgrind", "pairs", "floor"])
    ap.add_argument("folder", type=Path, nargs="?")
    ap.add_argument("corpus", type=Path, nargs="?")
    ap.add_argument("--keep", type=Path, help="build into this folder")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--only", nargs="*", help="build: compile these of MODULES only")
    a = ap.parse_args()
    if a.action == "build":
        dest = (a.keep or Path(tempfile.mkdtemp(prefix="rematch-mypyc-"))).resolve()
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        seconds, _log = build(dest, a.only or MODULES)
        print(f"built {len(compiled_modules(dest))} modules with mypyc in {seconds:.0f} s wall: {dest}")
        for m, why in SKIPPED.items():
            print(f"  not compiled: {m}: {why}")
        return
    if a.folder is None or a.corpus is None:
        ap.error("FOLDER and CORPUS are needed")
    folder, corpus = a.folder.resolve(), a.corpus.resolve()
    pure, fast = _envs(folder)
    with tempfile.TemporaryDirectory(prefix="rematch-mypyc-run-") as tmp:
        work = Path(tmp)
        if a.action == "same":
            d = {}
            for name, env in (("pure", pure), ("compiled", fast)):
                out = work / name
                _wall, _rss, code, err, cpu = measure_cpu(import_cmd(corpus, out, a.jobs), env)
                if code not in (0, 1):
                    sys.exit(f"{name} import failed ({code}): {err}")
                d[name] = digests(out)
                print(f"{name:<9} {cpu:6.2f} s CPU  " + "  ".join(f"{k} {v}" for k, v in d[name].items()))
            same = d["pure"] == d["compiled"]
            print("outputs " + ("byte-identical" if same else "DIFFERENT: "
                                + ", ".join(k for k in d["pure"] if d["pure"][k] != d["compiled"][k])))
            if not same:
                sys.exit(1)
        elif a.action == "callgrind":
            counts = {}
            for name, env in (("pure", pure), ("compiled", fast)):
                counts[name] = instructions(import_cmd(corpus, work / name, a.jobs), env, work / f"cg-{name}")
            print(f"instructions, cold import --jobs {a.jobs} of {corpus}: pure {counts['pure']:.0f} M, "
                  f"compiled {counts['compiled']:.0f} M ({counts['compiled'] / counts['pure']:.3f}x)")
        else:
            floor = str(HERE / "floor.py")
            stages: list[tuple[str, list[str] | None]] = [(f"cold import --jobs {a.jobs}", None)]
            if a.action == "floor":
                _wall, _rss, _code, _err, cpu = measure_cpu(parse_only(corpus), pure)
                print(f"orjson parse (no rematch code): {cpu:.2f} s CPU")
                res = subprocess.run([sys.executable, str(HERE / "python_floor.py"), str(corpus)],
                                     env=pure, capture_output=True, text=True, check=True)
                print(f"bench/python_floor.py (no rematch code): {res.stdout.strip()}")
                stages = [
                    ("read", [sys.executable, floor, str(corpus), "read"]),
                    ("read + translate", [sys.executable, floor, str(corpus), "translate"]),
                    ("import, index and summaries off", None),
                    *stages,
                ]
            for stage, cmd in stages:
                rows = []
                for n in range(a.pairs):
                    cpus = []
                    for name, env in (("pure", pure), ("compiled", fast)):
                        out = work / f"{name}-{n}"
                        c = cmd or import_cmd(corpus, out, a.jobs)
                        if cmd is None and stage.startswith("import,"):
                            c = [sys.executable, str(HERE / "no_follow.py"), *c[3:]]
                        _wall, _rss, code, err, cpu = measure_cpu(c, env)
                        if code not in (0, 1):
                            sys.exit(f"{stage} ({name}) failed ({code}): {err}")
                        shutil.rmtree(out, ignore_errors=True)
                        cpus.append(cpu)
                    rows.append(cpus)
                ratios = [p / c for p, c in rows]
                print(f"{stage}: pure {statistics.median(r[0] for r in rows):.2f} s CPU, compiled "
                      f"{statistics.median(r[1] for r in rows):.2f} s; speed-up (pure / compiled) by pair: median "
                      f"{statistics.median(ratios):.3f}x (min {min(ratios):.3f}, max {max(ratios):.3f}); "
                      f"load {os.getloadavg()[0]:.1f}")

if __name__ == "__main__":
    main()
