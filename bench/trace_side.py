"""The trace side of an import alone: synthesis and serialisation of records already translated.

    python bench/trace_side.py CORPUS [PASSES] [--no-redact]

Every file of CORPUS is read and translated to neutral records first, in
memory (so keep CORPUS small: /tmp/sub/small, 18 MB, holds about 7,600
records); then each pass feeds them to a fresh
:class:`~rematch_trace.trace.synth.Synthesizer` per session and writes the
trace lines to memory, as the import does. It prints the best and median pass
and a digest of the bytes (the same on any two checkouts whose traces agree).

Timing a pass is noisy on a shared machine; its instructions are not. Under
callgrind, the difference between a run of 3 passes and one of 1, halved, is
the trace side's cost per pass in instructions, comparable between checkouts
in one sitting.
"""

from __future__ import annotations

import functools
import hashlib
import sys
import time
from pathlib import Path

from rematch_trace.host import vocab
from rematch_trace.host.source import Problem
from rematch_trace.importing.discovery import discover
from rematch_trace.importing.settings import ImportSettings
from rematch_trace.importing.worker import worker_host
from rematch_trace.trace.lines import dumps_record
from rematch_trace.trace.synth import Synthesizer


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root, passes = Path(args[0]).resolve(), int(args[1]) if len(args) > 1 else 5
    host = worker_host()
    from rematch_trace.importing.pipeline import wiring as wiring_of

    wiring = wiring_of(ImportSettings(redact="--no-redact" not in sys.argv), host)
    streams = []
    for path, hint in discover(host, [root]):
        source = host.detect(Path(path), hint)
        if source is None:
            continue
        raw = (r for r in host.read(source, 0) if not isinstance(r, Problem))
        # As the import does: a failed result's error class settled once, before the synthesizer.
        recs = [vocab.settle_error_class(r) if type(r) is vocab.ToolResult else r
                for r in host.translate(source, raw, {})]
        streams.append((source, recs))
    print(f"{len(streams)} files, {sum(len(r) for _, r in streams):,} neutral records", file=sys.stderr)

    def one_pass() -> bytes:
        out = bytearray()
        for source, recs in streams:
            synths: dict[str, Synthesizer] = {}
            for rec in recs:
                synth = synths.get(rec.stream)
                if synth is None:
                    if not isinstance(rec, vocab.Session):
                        continue
                    synth = synths[rec.stream] = Synthesizer(
                        source.harness, place_of=host.place,
                        visible_of=functools.partial(host.visible, source),
                        redact=wiring.redact, redact_input=wiring.redact_input)
                for line in synth.feed(rec):
                    out += dumps_record(line)
            for synth in synths.values():
                for line in synth.finish():
                    out += dumps_record(line)
        return bytes(out)

    times = []
    data = b""
    for _ in range(passes):
        started = time.perf_counter()
        data = one_pass()
        times.append(time.perf_counter() - started)
    times.sort()
    print(f"pass: best {times[0]:.3f} s, median {times[len(times) // 2]:.3f} s; "
          f"{len(data):,} bytes, sha256 {hashlib.sha256(data).hexdigest()[:16]}")


if __name__ == "__main__":
    main()
