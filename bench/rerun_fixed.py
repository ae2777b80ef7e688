"""The fixed cost of continuing a grown file: a rerun after one small exchange was appended to every file.

    python bench/rerun_fixed.py --files 2000 --median-kb 50            # ms per continued file
    python bench/rerun_fixed.py --files 2000 --vs /other/.venv/bin/python   # paired against other code
    python bench/rerun_fixed.py --files 100000 --median-kb 4 --jobs 2 --rounds 1   # memory

Generates (or reuses) an archive of ``--files`` real-shaped transcripts (as
``bench/many_files.py`` does) under ``bench/out/fixed-N-K``, imports it cold
once per interpreter, and then, ``--rounds`` times: puts the archive and the
data folder back as the cold import left them (untimed), appends small
exchanges (a prompt and a text answer: two or three records, a few hundred
bytes) and times the rerun, each as its own process: one exchange to every
other file ("half"), one to every file ("all"), two to every file ("two"),
then a rerun with nothing changed ("same": start-up and planning alone).
Figures per continued file, in ms by wall and by CPU (user + system of the
command and its workers):

- *per file*: ``(all - half) / the files only "all" grew``: what one more
  continued file costs, without the run's one-time costs (start-up, loading
  the modules a continuation needs);
- *records*: ``(two - all) / files``: what one more exchange costs a file (the
  per-record work: reading, translating, the trace and the events);
- *fixed*: per file less records: a continued file's cost with nothing new in it,
  the part that does not follow the new bytes;
- *spread*: ``(all - same) / files``: the whole rerun's extra cost spread over
  its files, one-time costs included, as a +1% rerun of an archive sees it.

With ``--callgrind`` every timed command runs under ``valgrind --tool=callgrind``
(workers too) and the figures are instructions executed (in millions; per
file in thousands) instead of seconds: counts that a busy machine does not
change, though they leave out the time the kernel spends (file system, SQLite's
writes). Use few files (a few hundred): valgrind runs Python about 50x slower.

With ``--vs PYTHON`` (another checkout's virtualenv interpreter, with its own
``rematch``) both run in turn each round, A B / B A alternately, and the
ratios are taken pair by pair, so a comparison holds on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import Claude, Codex, Omp, _last_omp_id, dumps, words  # noqa: E402
from many_files import generate_many  # noqa: E402
from run import measure_cpu  # noqa: E402


def rematch_of(python: str) -> str:
    """The ``rematch`` script beside an interpreter."""
    exe = Path(python).parent / "rematch"
    if not exe.exists():
        raise SystemExit(f"no rematch beside {python}")
    return str(exe)


def append_one(corpus: Path, every: int = 1, exchanges: int = 1, seed: int = 3) -> int:
    """Append ``exchanges`` small exchanges to every file (every other one with ``every=2``), in
    its own format; return the bytes added.

    An exchange is a user prompt and the assistant's answer in text, no tool call:
    two or three records, so what remains of a continued file's cost is its fixed part.
    """
    rng = random.Random(seed)
    added = 0
    for i, p in enumerate(sorted(corpus.rglob("*.jsonl"))):
        if i % every:
            continue
        kind = p.relative_to(corpus).parts[0]
        sid = p.stem.split("_")[-1][-36:]
        out: list[bytes] = []
        c, x, o = Claude(rng, sid), Codex(rng, sid), Omp(rng, sid)
        if kind == "omp":
            o.parent = _last_omp_id(p)
        for _ in range(exchanges):
            prompt, answer = words(rng, rng.randint(5, 20)), words(rng, rng.randint(10, 40))
            if kind == "claude_code":
                d = c._base("user")
                d["message"] = {"role": "user", "content": prompt}
                out.append(dumps(d))
                d = c._base("assistant")
                d["message"] = {"id": f"msg_{rng.getrandbits(64):016x}", "type": "message", "role": "assistant",
                                "model": "claude-opus-4-6", "content": [{"type": "text", "text": answer}],
                                "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 50}}
                out.append(dumps(d))
            elif kind == "codex":
                out.append(x.line("response_item", {"type": "message", "role": "user",
                                                    "content": [{"type": "input_text", "text": prompt}]}))
                out.append(x.line("event_msg", {"type": "user_message", "message": prompt, "images": []}))
                out.append(x.line("response_item", {"type": "message", "role": "assistant",
                                                    "content": [{"type": "output_text", "text": answer}]}))
            else:
                out.append(o.entry({"role": "user", "content": [{"type": "text", "text": prompt}],
                                    "attribution": "user", "timestamp": 1772323200000}))
                out.append(o.entry({"role": "assistant", "content": [{"type": "text", "text": answer}],
                                    "provider": "anthropic", "model": "claude-opus-4-5", "stopReason": "stop",
                                    "usage": {"input": 10, "output": 50, "cacheRead": 0, "cacheWrite": 0,
                                              "totalTokens": 60, "cost": {"total": 0.001}},
                                    "timestamp": 1772323200001}))
        data = b"".join(out)
        with open(p, "ab") as f:
            f.write(data)
        added += len(data)
    return added


def callgrind(cmd: list[str]) -> tuple[float, float, int, str, float]:
    """Run ``cmd`` (and its workers) under callgrind: as :func:`measure_cpu`, with millions of
    instructions in place of both wall and CPU seconds."""
    with tempfile.TemporaryDirectory(prefix="rerun-cg-") as tmp:
        res = subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes", "--dump-instr=no",
                              f"--callgrind-out-file={tmp}/cg.%p", *cmd], capture_output=True, text=True)
        total = 0
        for f in Path(tmp).iterdir():
            for line in f.read_text(errors="replace").splitlines():
                if line.startswith(("summary:", "totals:")):
                    total += int(line.split()[1])
                    break
    mi = total / 1e6
    return mi, 0.0, res.returncode, res.stderr, mi


def snapshot(corpus: Path) -> dict[str, tuple[int, int, int]]:
    """Each file's size, atime and mtime (ns), to put the archive back as it was."""
    out = {}
    for p in corpus.rglob("*.jsonl"):
        st = p.stat()
        out[str(p)] = (st.st_size, st.st_atime_ns, st.st_mtime_ns)
    return out


def restore(files: dict[str, tuple[int, int, int]]) -> None:
    """Cut every file back to its recorded size and give it back its times."""
    for path, (size, atime, mtime) in files.items():
        os.truncate(path, size)
        os.utime(path, ns=(atime, mtime))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--median-kb", type=int, default=50)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--vs", help="a second interpreter (another checkout's .venv/bin/python) to pair against")
    ap.add_argument("--callgrind", action="store_true", help="count instructions under valgrind, not seconds")
    ap.add_argument("--regenerate", action="store_true")
    a = ap.parse_args()
    measure = callgrind if a.callgrind else measure_cpu
    # Timed as users run it: with the modules' bytecode cached (the cold import writes it).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

    work = HERE / "out" / f"fixed-{a.files}-{a.median_kb}"
    corpus = work / "corpus"
    stamp = work / "corpus.json"
    if a.regenerate or not stamp.exists():
        shutil.rmtree(work, ignore_errors=True)
        corpus.mkdir(parents=True)
        generate_many(corpus, a.files, a.median_kb)
        stamp.write_text(json.dumps({"files": a.files, "median_kb": a.median_kb, "sizes": snapshot(corpus)}))
    pristine = {k: tuple(v) for k, v in json.loads(stamp.read_text())["sizes"].items()}
    restore(pristine)  # an earlier run may have stopped after appending

    impls = {"A": sys.executable} | ({"B": a.vs} if a.vs else {})
    bases: dict[str, Path] = {}
    for name, python in impls.items():
        base = work / f"base-{name}"
        shutil.rmtree(base, ignore_errors=True)
        cmd = [rematch_of(python), "import", str(corpus), "--out", str(base), "--jobs", "2", "--quiet"]
        subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL)
        bases[name] = base
    os.sync()

    # (impl, jobs, run) -> one (wall, cpu) per round. The runs: one exchange appended to every
    # other file, to every file, two exchanges to every file, then nothing changed (in the folder
    # the one before left).
    runs = ("half", "all", "two", "same")
    got: dict[tuple[str, int, str], list[tuple[float, float]]] = {}
    rss: dict[tuple[str, int], float] = {}
    added = 0

    def timed(name: str, jobs: int, run: str, out: Path) -> None:
        cmd = [rematch_of(impls[name]), "import", str(corpus), "--out", str(out), "--jobs", str(jobs), "--quiet"]
        wall, peak, code, err, cpu = measure(cmd)
        if code not in (0, 1):
            sys.stderr.write(err)
            raise SystemExit(f"{name} --jobs {jobs}: exit {code}")
        got.setdefault((name, jobs, run), []).append((wall, cpu))
        rss[(name, jobs)] = max(rss.get((name, jobs), 0.0), peak)

    for r in range(a.rounds):
        for jobs in a.jobs:
            order = list(impls) if r % 2 == 0 else list(reversed(impls))
            for name in order:
                out = work / f"run-{name}"
                for run, every, exchanges in (("half", 2, 1), ("all", 1, 1), ("two", 1, 2)):
                    restore(pristine)
                    shutil.rmtree(out, ignore_errors=True)
                    shutil.copytree(bases[name], out)
                    grown = append_one(corpus, every, exchanges)
                    added = grown if run == "all" else added
                    os.sync()
                    timed(name, jobs, run, out)
                timed(name, jobs, "same", out)
    restore(pristine)

    n = a.files
    half = len(range(0, n, 2))
    unit = "Mi" if a.callgrind else "s"
    print(f"corpus: {n:,} files, median {a.median_kb} KB, +{added / 1e3:,.0f} KB appended to all "
          f"({added / n:,.0f} B a file); {a.rounds} rounds; {os.cpu_count()} cores; python {sys.version.split()[0]}")
    for name, python in impls.items():
        print(f"  {name}: {python}")
    if a.callgrind:
        print("instructions executed, in millions (Mi) a run and thousands (ki) a file")
    print("per file: (all - half) / the files only 'all' grew; records: (two - all) / files, what one more "
          "exchange costs; fixed: per file - records, a continued file's cost less its new records'; "
          "spread: (all - same) / files, the rerun's extra cost over its files, one-time costs included")
    what = "ki" if a.callgrind else "ms"
    cols = [f"half {unit}", f"all {unit}", f"two {unit}", f"same {unit}", f"{what} per file", f"{what} records",
            f"{what} fixed", f"{what} spread"]
    head = " ".join(f"{c:>11}" for c in cols)
    print(f"{'run':<12} {head}" + ("" if a.callgrind else f" {'peak MiB':>9}"))
    per_file: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
    for name in impls:
        for jobs in a.jobs:
            rows = {run: got[(name, jobs, run)] for run in runs}
            for i, kind in ((0, "wall"), (1, "CPU")):
                if a.callgrind and i:
                    continue
                each = [(h[i], al[i], t[i], sm[i]) for h, al, t, sm
                        in zip(rows["half"], rows["all"], rows["two"], rows["same"], strict=True)]
                slopes = [(al - h) * 1e3 / (n - half) for h, al, _t, _s in each]
                records = [(t - al) * 1e3 / n for _h, al, t, _s in each]
                fixed = [sl - rec for sl, rec in zip(slopes, records, strict=True)]
                spread = [(al - sm) * 1e3 / n for _h, al, _t, sm in each]
                if i == 0:
                    per_file[(name, jobs)] = list(zip(slopes, fixed, spread, strict=True))
                cells = [statistics.median(x[i] for x in rows[run]) for run in runs]
                cells += [statistics.median(v) for v in (slopes, records, fixed, spread)]
                label = f"{name} -j{jobs}" + ("" if a.callgrind else f" {kind}")
                print(f"{label:<12} " + " ".join(f"{c:>11.3f}" for c in cells)
                      + ("" if a.callgrind or i else f" {rss[(name, jobs)]:>9.0f}"))
    if a.vs:
        for jobs in a.jobs:
            pairs = list(zip(per_file[("A", jobs)], per_file[("B", jobs)], strict=True))
            parts = [f"{label} " + ", ".join(f"{x[k] / y[k]:.2f}" for x, y in pairs)
                     for k, label in ((0, "per file"), (1, "fixed"), (2, "spread"))]
            print(f"-j{jobs}: A/B pair by pair ({'instructions' if a.callgrind else 'wall'}): {'; '.join(parts)}")

if __name__ == "__main__":
    main()
