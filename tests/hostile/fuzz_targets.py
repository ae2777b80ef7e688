"""Coverage-guided fuzz targets (atheris): the line reader, each importer, the IPC v2 codec, model verdicts.

Run one for a while (see docs/fuzzing.md)::

    python tests/hostile/fuzz_targets.py jsonl -max_total_time=600 /tmp/corpus-jsonl tests/hostile/fuzz_corpus/jsonl

A target raises only on a real bug: an exception escaping the reader or the
import (a plugin failure included), or a trace that breaks the contract.
``TARGETS[name](data)`` is also what the regression test replays the kept
corpus through.
"""

from __future__ import annotations

import atexit
import io
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

#: Small limits keep each run fast and reach the big-line and oversized paths with small inputs.
MAX_LINE = 4096

_host = None
_tmp: Path | None = None


def _setup() -> Path:
    """One scratch folder (in memory where possible) and one plugin host per process."""
    global _host, _tmp
    if _tmp is None:
        import rematch_claude_code
        import rematch_codex
        import rematch_omp
        from rematch_trace.testing import make_host

        # libFuzzer ends the process without atexit: a caller may give a folder it cleans itself.
        base = os.environ.get("REMATCH_FUZZ_TMP") or (
            "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        )
        _tmp = Path(tempfile.mkdtemp(prefix="rematch-fuzz-", dir=base))
        atexit.register(shutil.rmtree, _tmp, True)
        _host = make_host([rematch_claude_code, rematch_codex, rematch_omp])
    return _tmp


def fuzz_jsonl(data: bytes) -> None:
    """The line reader: never raises; records are objects at increasing, in-range offsets."""
    import rematch_trace.importing.reader as jsonl
    from rematch_trace.host.source import Problem, RawRecord
    from rematch_trace.importing.reader import read_jsonl

    old, old_whole = jsonl.BIG_LINE, jsonl.WHOLE_LINE
    jsonl.BIG_LINE = jsonl.WHOLE_LINE = 256  # reach the streaming (ijson) path with small inputs
    try:
        last = 0
        for item in read_jsonl(io.BufferedReader(io.BytesIO(data)), "fuzz", max_line=MAX_LINE):
            if isinstance(item, RawRecord):
                assert type(item.value) is dict
                assert last <= item.offset < item.end <= len(data), (last, item.offset, item.end)
                last = item.end
            else:
                assert isinstance(item, Problem) and item.line >= 1
    finally:
        jsonl.BIG_LINE, jsonl.WHOLE_LINE = old, old_whole


_NAMES = {
    "claude_code": "claude/projects/-p/11111111-2222-3333-4444-555555555555.jsonl",
    "codex": "codex/sessions/2026/01/01/rollout-2026-01-01T00-00-00-019a0000-1111-7222-8333-444444444444.jsonl",
    "omp": "omp/sessions/--p--/2026-01-01T00-00-00-000Z_0198cc2a-0000-7000-8000-000000000001.jsonl",
}
_HINTS = {"claude_code": "claude_code", "codex": "codex", "omp": "omp"}


def _import(harness: str, data: bytes) -> None:
    """Import ``data`` as a ``harness`` transcript through the real core; check every trace."""
    import orjson

    from rematch_trace.importing.settings import ImportSettings
    from rematch_trace.importing.source_import import import_source
    from rematch_trace.store.datafolder import DataDir
    from rematch_trace.testing import validate_trace

    tmp = _setup()
    src = tmp / "src" / _NAMES[harness]
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_bytes(data)
    out = tmp / "out"
    if out.exists():
        shutil.rmtree(out)
    ddir = DataDir(out)
    ddir.ensure()
    assert _host is not None
    source = _host.detect(src, _HINTS[harness])
    if source is None:
        return
    outcome = import_source(_host, source, ddir, ImportSettings())
    for s in outcome.sessions:
        recs = [orjson.loads(x) for x in s.trace_path.read_bytes().splitlines()]
        errors = validate_trace(recs)
        assert not errors, errors[:3]


def fuzz_claude_code(data: bytes) -> None:
    """Claude Code's reader, translator and the core synthesizer over arbitrary bytes."""
    _import("claude_code", data)


def fuzz_codex(data: bytes) -> None:
    """Codex's reader, translator and the core synthesizer over arbitrary bytes."""
    _import("codex", data)


def fuzz_omp(data: bytes) -> None:
    """omp's tree reader, translator and the core synthesizer over arbitrary bytes."""
    _import("omp", data)


def fuzz_ipc_frame(data: bytes) -> None:
    """The IPC v2 codec and request check: only DecodeError escapes; what decodes re-encodes to itself."""
    import time

    from rematch_trace.live.ipc.codec import (
        ERROR_CODES,
        MAX_REQUEST_BYTES,
        DecodeError,
        decode_frame,
        encode_frame,
    )
    from rematch_trace.live.ipc.messages import check_request

    # As a whole frame, and as a payload behind a correct header.
    for framed in (data, len(data).to_bytes(4, "big") + data):
        try:
            value = decode_frame(framed, MAX_REQUEST_BYTES, deadline=time.monotonic() + 5)
        except DecodeError as err:
            assert err.code in ERROR_CODES, err.code
            continue
        again = encode_frame(value, 1 << 30)
        assert decode_frame(again, 1 << 30, deadline=time.monotonic() + 5) == value
        try:
            check_request(value)
        except DecodeError as err:
            assert err.code in ERROR_CODES, err.code


def fuzz_model_verdict(data: bytes) -> None:
    """The model-verdict decoder: only ModelVerdictError escapes; what decodes is in its domains."""
    from rematch_trace.live.verdicts.model import (
        CATEGORIES,
        RECOMMENDED_ACTIONS,
        ModelVerdictError,
        decode_model_verdict,
    )

    try:
        v = decode_model_verdict(data)
    except ModelVerdictError:
        return
    assert v.category in CATEGORIES and v.recommended_action in RECOMMENDED_ACTIONS
    assert 0 <= v.confidence <= 1 and len(v.rationale) <= 1000 and len(v.evidence) <= 8


TARGETS: dict[str, Callable[[bytes], None]] = {
    "jsonl": fuzz_jsonl,
    "claude_code": fuzz_claude_code,
    "codex": fuzz_codex,
    "omp": fuzz_omp,
    "ipc_frame": fuzz_ipc_frame,
    "model_verdict": fuzz_model_verdict,
}


def main(argv: list[str]) -> None:
    """``fuzz_targets.py TARGET [libFuzzer flags and corpus folders]``."""
    import atheris

    # libFuzzer re-runs this script for -merge and -jobs: the target travels in the environment,
    # and the command it runs is "python script" (the script need not be executable).
    name = argv[1] if len(argv) > 1 and argv[1] in TARGETS else os.environ.get("REMATCH_FUZZ_TARGET", "")
    if name not in TARGETS:
        sys.exit(f"usage: {argv[0]} {{{','.join(TARGETS)}}} [libFuzzer args]")
    os.environ["REMATCH_FUZZ_TARGET"] = name
    rest = argv[2:] if len(argv) > 1 and argv[1] == name else argv[1:]
    with atheris.instrument_imports():
        import rematch_claude_code  # noqa: F401
        import rematch_codex  # noqa: F401
        import rematch_omp  # noqa: F401
        import rematch_trace.importing.reader
        import rematch_trace.importing.source_import
        import rematch_trace.live.ipc.codec
        import rematch_trace.live.ipc.messages
        import rematch_trace.live.verdicts.model
        import rematch_trace.trace.synth  # noqa: F401
    _setup()
    atheris.Setup([f"{sys.executable} {Path(__file__).resolve()}", *rest], TARGETS[name])
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
