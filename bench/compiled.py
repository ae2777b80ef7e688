"""What compiling the cold path's own sources with Cython would gain: built here, measured paired.

    python bench/compiled.py CORPUS                      # the "unchanged" build, 3 pairs
    python bench/compiled.py CORPUS --variant typed      # with bench/compiled/*.pxd beside the sources
    python bench/compiled.py CORPUS --callgrind SMALL    # also instructions of both, on a small corpus

Copies ``core/rematch_trace`` and the Claude Code plugin's package from this
checkout into a temporary folder, compiles the per-record modules of a cold
import there (``MODULES``) with Cython 3 in pure-Python mode (the same ``.py``
files; needs ``pip install cython`` and a C compiler), then runs cold
``rematch import --jobs 1`` of CORPUS alternately with the pure sources and
with the compiled folder first on ``PYTHONPATH`` (the editable installs stay
as they are; an extension module shadows the ``.py`` beside it). It reports
each run's user + system CPU seconds (its own and its children's) and wall
time, the ratio of the medians, and whether the two outputs' ``traces/``,
``events/`` and ``pending/`` are byte-identical. Nothing is installed and
nothing in the checkout changes.

``.pyc`` files are written for both first (``compileall``), so neither run
parses sources (``PYTHONDONTWRITEBYTECODE`` is dropped for the runs).

Variants (``--variant``):

* ``unchanged``: ``annotation_typing=False``, every name a Python object: what
  compilation alone removes (the interpreter's dispatch and frame set-up);
* ``annotated``: Cython also reads the type hints (``dict``, ``list``, ``str``
  arguments and locals become exact-type references with direct C calls);
* ``typed``: ``unchanged`` plus the augmenting ``.pxd`` files under
  ``bench/compiled/`` copied beside their modules: the per-record classes
  (the Claude Code translator and its id window, the event sink, the
  synthesizer, the input walk) become final extension types with C attribute
  slots and ``cpdef`` methods (direct C calls between them).

``--modules all`` compiles every module of the two packages instead (but the
``__main__`` modules and those holding pluggy hook specifications or
implementations, which pluggy does not find once compiled): about 9 minutes
of C builds on this machine, against 1-2 for ``MODULES``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PXD = HERE / "compiled"
sys.path.insert(0, str(HERE))

from run import measure_cpu  # noqa: E402

# The packages copied, and the modules compiled in them: the per-record work of
# a cold Claude Code import (cProfile of a one-job import of real sessions).
PACKAGES = {
    "rematch_trace": ROOT / "core" / "rematch_trace",
    "rematch_claude_code": ROOT / "plugins" / "claude_code" / "rematch_claude_code",
}
MODULES = [
    "rematch_claude_code/translate.py",
    "rematch_claude_code/reader.py",
    "rematch_claude_code/usertext.py",
    "rematch_trace/importing/reader.py",
    "rematch_trace/importing/source_import.py",
    "rematch_trace/trace/synth.py",
    "rematch_trace/trace/prelabel.py",
    "rematch_trace/trace/truncate.py",
    "rematch_trace/trace/canonical.py",
    "rematch_trace/host/exactnum.py",
    "rematch_trace/trace/flags.py",
    "rematch_trace/security/events.py",
    "rematch_trace/security/redact.py",
    "rematch_trace/security/risk.py",
    "rematch_trace/security/strings.py",
    "rematch_trace/security/scan.py",
    "rematch_trace/security/fingerprint.py",
    "rematch_trace/host/facade.py",
    "rematch_trace/host/timestamps.py",
    "rematch_trace/host/vocab.py",
]
DIRECTIVES = {
    "unchanged": ["annotation_typing=False"],
    "annotated": [],
    "typed": ["annotation_typing=False"],
}


def build(dest: Path, variant: str, jobs: int, modules: list[str]) -> float:
    """Copy the packages into ``dest`` and compile ``modules`` in place; return the build's wall seconds.

    A module Cython cannot compile is left as its ``.py`` (``cythonize -k``):
    :func:`compiled_modules` says which were.
    """
    for name, src in PACKAGES.items():
        shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"))
    if variant == "typed":
        for pxd in PXD.rglob("*.pxd"):
            target = dest / pxd.relative_to(PXD)
            shutil.copyfile(pxd, target)
    cythonize = shutil.which("cythonize", path=str(Path(sys.executable).parent)) or "cythonize"
    cmd = [cythonize, "-3", "-i", "-q", "-k", "-j", str(jobs)]
    for directive in DIRECTIVES[variant]:
        cmd += ["-X", directive]
    started = time.perf_counter()
    res = subprocess.run([*cmd, *modules], cwd=dest, capture_output=True, text=True)
    if not compiled_modules(dest, modules):
        sys.exit(f"cythonize failed:\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}")
    return time.perf_counter() - started


def all_modules() -> list[str]:
    """Every module of the copied packages (``--modules all``)."""
    return sorted(
        f"{name}/{p.relative_to(src).as_posix()}"
        for name, src in PACKAGES.items()
        for p in src.rglob("*.py")
        if p.name != "__main__.py"  # (it runs the command line when imported)
        # pluggy finds no hook specifications or implementations among compiled functions.
        and not re.search(r"^\s*@(hookimpl|hookspec)", p.read_text(), re.MULTILINE)
    )


def compiled_modules(dest: Path, modules: list[str]) -> list[str]:
    """Those of ``modules`` that have an extension module beside them in ``dest``."""
    return [m for m in modules if list((dest / m).parent.glob((dest / m).stem + ".*.so"))]


def byte_compile(*folders: Path) -> None:
    """Write the ``.pyc`` of every module under ``folders``, as an installed package has them.

    Without them (``PYTHONDONTWRITEBYTECODE`` set, a fresh checkout) every run
    would parse and compile the pure modules again, a cost the compiled ones
    skip: about a sixth of a cold import's instructions on 18 MB.
    """
    for folder in folders:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(folder)], check=True, capture_output=True)


def pure_env() -> dict[str, str]:
    """This environment, reading the ``.pyc`` files :func:`byte_compile` wrote."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def compiled_env(folder: Path) -> dict[str, str]:
    """The environment that puts ``folder`` before the editable installs."""
    env = pure_env()
    env["PYTHONPATH"] = os.pathsep.join([str(folder), *filter(None, [env.get("PYTHONPATH")])])
    return env


def check_loaded(env: dict[str, str], modules: list[str]) -> None:
    """Exit unless every one of ``modules`` is imported from its extension module."""
    names = [m.removesuffix(".py").removesuffix("/__init__").replace("/", ".") for m in modules]
    code = (
        "import importlib, sys\n"
        f"bad = [n for n in {names!r} if not importlib.import_module(n).__file__.endswith('.so')]\n"
        "print(' '.join(bad))"
    )
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"the compiled modules do not import:\n{res.stderr[-2000:]}")
    if res.stdout.strip():
        sys.exit(f"not loaded compiled: {res.stdout.strip()}")


def run_import(corpus: Path, out: Path, env: dict[str, str]) -> tuple[float, float]:
    """One cold ``rematch import --jobs 1``: (user + system CPU seconds, wall seconds)."""
    cmd = [sys.executable, "-m", "rematch_trace.cli", "import", str(corpus), "--out", str(out), "--jobs", "1", "-q"]
    wall, _rss, code, err, cpu = measure_cpu(cmd, env)
    if code != 0:
        sys.exit(f"import failed ({code}): {err}")
    return cpu, wall


def tree_hash(root: Path) -> str:
    """One hash over the relative paths and bytes of every output file under ``root``."""
    h = hashlib.sha256()
    for sub in ("traces", "events", "pending"):
        for p in sorted((root / sub).rglob("*")) if (root / sub).exists() else []:
            if p.is_file():
                h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def instructions(corpus: Path, env: dict[str, str], work: Path) -> float:
    """Millions of instructions of a cold one-job import of ``corpus`` under callgrind."""
    prof = work / f"cg.{len(list(work.iterdir()))}.out"
    out = work / f"cg-out-{prof.stem}"
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={prof}", sys.executable,
           "-m", "rematch_trace.cli", "import", str(corpus), "--out", str(out), "--jobs", "1", "-q"]
    subprocess.run(cmd, env=env, capture_output=True, check=True)
    for line in prof.read_text(errors="replace").splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1]) / 1e6
    raise RuntimeError(f"no totals in {prof}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--variant", choices=sorted(DIRECTIVES), default="unchanged")
    ap.add_argument("--modules", choices=["hot", "all"], default="hot",
                    help="the per-record modules (MODULES, default) or every module of the two packages")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--build-jobs", type=int, default=2)
    ap.add_argument("--callgrind", type=Path, help="also count instructions of both on this (small) corpus")
    ap.add_argument("--keep", type=Path, help="build into this folder (kept) instead of a temporary one")
    ap.add_argument("--reuse", action="store_true", help="measure the build already in --keep's folder")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="rematch-compiled-") as tmp:
        work = Path(tmp)
        folder = args.keep or work / "build"
        wanted = MODULES if args.modules == "hot" else all_modules()
        if args.reuse and args.keep:
            print(f"reusing the build in {folder}")
        else:
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            seconds = build(folder, args.variant, args.build_jobs, wanted)
            print(f"built ({args.variant}) in {seconds:.0f} s wall, {folder}")
        done = compiled_modules(folder, wanted)
        print(f"{len(done)} of {len(wanted)} modules compiled")
        if len(done) < len(wanted):
            print("  not compiled (left as .py): " + " ".join(sorted(set(wanted) - set(done))))
        byte_compile(ROOT / "core", ROOT / "plugins", folder)
        pure, fast = pure_env(), compiled_env(folder)
        check_loaded(fast, done)
        rows: list[tuple[float, float, float, float]] = []
        hashes: set[tuple[str, str]] = set()
        for n in range(args.pairs):
            cpu_p, wall_p = run_import(args.corpus, work / f"pure-{n}", pure)
            cpu_c, wall_c = run_import(args.corpus, work / f"compiled-{n}", fast)
            hashes.add((tree_hash(work / f"pure-{n}"), tree_hash(work / f"compiled-{n}")))
            shutil.rmtree(work / f"pure-{n}")
            shutil.rmtree(work / f"compiled-{n}")
            rows.append((cpu_p, cpu_c, wall_p, wall_c))
            print(f"pair {n + 1}: pure {cpu_p:.2f} s CPU ({wall_p:.2f} wall)   "
                  f"compiled {cpu_c:.2f} s CPU ({wall_c:.2f} wall)   ratio {cpu_c / cpu_p:.3f}")
        cpu = statistics.median(r[1] for r in rows) / statistics.median(r[0] for r in rows)
        wall = statistics.median(r[3] for r in rows) / statistics.median(r[2] for r in rows)
        same = all(a == b for a, b in hashes) and len({a for a, _ in hashes}) == 1
        print(f"compiled / pure, ratio of medians: CPU {cpu:.3f}x, wall {wall:.3f}x; "
              f"outputs {'byte-identical' if same else 'DIFFERENT'}; load {os.getloadavg()[0]:.1f}")
        if args.callgrind:
            a = instructions(args.callgrind, pure, work)
            b = instructions(args.callgrind, fast, work)
            print(f"instructions on {args.callgrind}: pure {a:.0f} M, compiled {b:.0f} M ({b / a:.3f}x)")
        if not same:
            sys.exit(1)


if __name__ == "__main__":
    main()
