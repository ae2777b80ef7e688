"""``rematch export otlp`` against the cold import of the same files, in one run.

    python bench/export_otlp.py --size-mb 64      # real Claude Code sessions copied with fresh ids
    python bench/export_otlp.py --data DIR        # a data folder already imported (copied first; its import not rerun)

Builds (or reuses) an archive with bench/real_copies.py's builder in bench/out/export-otlp, then, each
as its own process: the cold import (all cores), the export to an OTLP/HTTP receiver on loopback (a
stub in this process that reads each request and acknowledges it: the cost measured is rematch's,
not a backend's), the rerun of the export (nothing to send), and the export to an OTLP JSON file.
The issue's target: the export takes no more than the cold import.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from real_copies import _DEFAULT_SOURCE, build, sessions_of  # noqa: E402


class Sink:
    """An OTLP/HTTP endpoint on loopback that reads and acknowledges every request."""

    def __init__(self) -> None:
        self.requests = 0
        self.bytes = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.requests += 1
                owner.bytes += len(body)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


#: CPU seconds (user + system) of each command :func:`timed` ran, in order.
CPU: list[float] = []


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(*args: str) -> tuple[float, str]:
    """Wall seconds and output of one ``rematch`` command (it must succeed); its CPU goes to :data:`CPU`."""
    cpu = _children_cpu()
    t = time.perf_counter()
    got = subprocess.run([sys.executable, "-m", "rematch_trace.cli", *args], capture_output=True, text=True)
    if got.returncode not in (0, 1):
        raise SystemExit(f"rematch {' '.join(args)}: {got.stderr}")
    wall = time.perf_counter() - t
    CPU.append(_children_cpu() - cpu)
    lines = got.stdout.strip().splitlines()
    return wall, lines[-1] if lines else got.stderr.strip()[-200:]


def exports(data: Path) -> None:
    """Measure the exports of an imported data folder, each its own process."""
    sink = Sink()
    sent, said = timed("export", "otlp", "--data", str(data), "--endpoint", sink.url)
    rerun, again = timed("export", "otlp", "--data", str(data), "--endpoint", sink.url)
    filed, _ = timed("export", "otlp", "--data", str(data), "--file", str(data / "out.json"))
    c = CPU[-3:]
    print(f"export otlp (loopback HTTP)    {sent:7.2f} s wall {c[0]:7.2f} s CPU ({said}; "
          f"{sink.requests} requests, {sink.bytes / 1e6:.1f} MB of protobuf)")
    print(f"export otlp again (nothing)    {rerun:7.2f} s wall {c[1]:7.2f} s CPU ({again})")
    print(f"export otlp --file             {filed:7.2f} s wall {c[2]:7.2f} s CPU")
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def main() -> None:
    """Build the archive, then measure the import and the exports."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size-mb", type=int, default=64)
    ap.add_argument("--median-kb", type=int, default=560)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--source", type=Path, default=_DEFAULT_SOURCE)
    ap.add_argument("--work", type=Path, default=HERE / "out" / "export-otlp")
    ap.add_argument("--data", type=Path, help="an imported data folder: copied, then only exported")
    a = ap.parse_args()
    if a.data is not None:
        print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        copy = Path(tempfile.mkdtemp(prefix="export-otlp-data-")) / "data"
        try:
            shutil.copytree(a.data, copy, symlinks=True)
            traces = sum(p.stat().st_size for p in (copy / "traces").glob("*.jsonl"))
            print(f"data folder {a.data}: {sum(1 for _ in (copy / 'traces').glob('*.jsonl'))} traces, "
                  f"{traces / 1e6:.1f} MB")
            exports(copy)
        finally:
            shutil.rmtree(copy.parent, ignore_errors=True)
        return
    corpus = a.work / "corpus"
    if not corpus.is_dir():
        corpus.mkdir(parents=True)
        build(corpus, a.work / "next", sessions_of(a.source), a.size_mb, a.median_kb, a.seed)
    size = sum(p.stat().st_size for p in corpus.rglob("*.jsonl"))
    files = sum(1 for _ in corpus.rglob("*.jsonl"))
    data = Path(tempfile.mkdtemp(prefix="export-otlp-data-"))
    try:
        imported, _ = timed("import", str(corpus), "--data", str(data))
        traces = sum(p.stat().st_size for p in (data / "traces").glob("*.jsonl"))
        print(f"archive: {size / 1e6:.1f} MB in {files} files; traces {traces / 1e6:.1f} MB")
        print(f"cold import (all cores)        {imported:7.2f} s wall {CPU[0]:7.2f} s CPU")
        exports(data)
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
