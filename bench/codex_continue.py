"""What the Codex translator's continuation costs: its saved state, unsealed, and the +1% after it.

    python bench/codex_continue.py                                  # the shared corpus's rollouts
    python bench/codex_continue.py --vs /tmp/base/rematch_codex      # paired with another checkout's plugin

Every real rollout of the shared corpus (``--corpus``) is paused at ``--cuts``
points spread over its lines; at each the translator's state is saved as the
core saves it (``state_dumps``). A continuation is then timed, in this process
by CPU time and with nothing else of an import: the saved state parsed
(``state_loads``), the translator made from it (a version-2 Codex state reads
the lines its sealed values came from again here), the next 1% of the file's
lines (at least one) translated, and the new state saved. Beside it, the cold
translation of each whole file, and the saved states' sizes.

With ``--vs``, a second ``rematch_codex`` package (another checkout's, a folder)
is measured the same way, its rounds interleaved with this checkout's.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from rematch_trace.host.source import RawRecord, Source
from rematch_trace.store.states import state_dumps, state_loads

HERE = Path(__file__).resolve().parent
_CORPUS = HERE.parent.parent / "shared" / "corpus" / "codex"


def _load(folder: Path, name: str) -> ModuleType:
    """A ``rematch_codex`` package from ``folder`` under its own name; its ``translate`` module."""
    spec = importlib.util.spec_from_file_location(name, folder / "__init__.py", submodule_search_locations=[str(folder)])
    assert spec is not None and spec.loader is not None
    pkg = importlib.util.module_from_spec(spec)
    sys.modules[name] = pkg
    spec.loader.exec_module(pkg)
    return importlib.import_module(f"{name}.translate")


class _Case:
    """One rollout: its records, and per cut point the state saved there."""

    def __init__(self, tr: ModuleType, path: Path, cuts: int) -> None:
        from rematch_trace.importing.reader import read_source

        self.source = Source("codex", path, compression="zst" if path.name.endswith(".zst") else "")
        self.records = [r for r in read_source(self.source, 0) if isinstance(r, RawRecord)]
        n = len(self.records)
        self.step = max(1, n // 100)
        points = sorted({max(1, (i + 1) * (n - self.step) // (cuts + 1)) for i in range(cuts)})
        self.saved: dict[int, bytes] = {}
        state: dict[str, Any] = {}

        def feed() -> Iterator[RawRecord]:
            for i, rec in enumerate(self.records):
                if i in wanted:
                    self.saved[i] = state_dumps(state)
                yield rec

        wanted = set(points)
        for _ in tr.translate(self.source, feed(), state):
            pass


def _cold(tr: ModuleType, case: _Case) -> float:
    t0 = time.process_time()
    for _ in tr.translate(case.source, iter(case.records), {}):
        pass
    return time.process_time() - t0


def _continue(tr: ModuleType, case: _Case) -> float:
    t0 = time.process_time()
    for cut, blob in case.saved.items():
        state = state_loads(blob)
        for _ in tr.translate(case.source, iter(case.records[cut : cut + case.step]), state):
            pass
        state_dumps(state)
    return time.process_time() - t0


def main() -> None:
    """Measure and print (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=_CORPUS)
    ap.add_argument("--cuts", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--vs", type=Path, help="another rematch_codex package folder to pair against")
    args = ap.parse_args()
    here = Path(importlib.util.find_spec("rematch_codex").origin or "").parent  # type: ignore[union-attr]
    plugins = {"this": _load(here, "rematch_codex_this")}
    if args.vs is not None:
        plugins["vs"] = _load(args.vs, "rematch_codex_vs")
    files = sorted(p for p in args.corpus.rglob("rollout-*.jsonl*") if p.is_file())
    cases = {name: [_Case(tr, p, args.cuts) for p in files] for name, tr in plugins.items()}
    cold: dict[str, list[float]] = {name: [] for name in plugins}
    cont: dict[str, list[float]] = {name: [] for name in plugins}
    for _ in range(args.rounds):
        for name, tr in plugins.items():
            cold[name].append(sum(_cold(tr, c) for c in cases[name]))
            cont[name].append(sum(_continue(tr, c) for c in cases[name]))
    n_cont = sum(len(c.saved) for c in next(iter(cases.values())))
    mb = sum(p.stat().st_size for p in files) / 1e6
    print(f"{len(files)} rollouts, {mb:.1f} MB, {n_cont} continuations (+1% of the lines each)")
    for name in plugins:
        sizes = [len(b) for c in cases[name] for b in c.saved.values()]
        print(f"{name:>5}: cold translate {statistics.median(cold[name]) * 1e3:8.1f} ms (median of {args.rounds})"
              f"  continuations {statistics.median(cont[name]) * 1e3:8.1f} ms"
              f" ({statistics.median(cont[name]) / n_cont * 1e6:6.1f} us each)"
              f"  saved state: median {statistics.median(sizes)} B, max {max(sizes)} B")


if __name__ == "__main__":
    main()
