"""The compatibility table: each harness at its pinned and its newest published version × import / live / deny / hold.

``python tests/harness/compat.py [--write]`` installs the newest version of each harness the rig
drives (``npm view``, then the rig's own install into the cache), runs that harness's rig tests
against each version (``REMATCH_RIG_VERSION_<NAME>``), and prints the table; ``--write`` also puts
it into ``docs/compatibility.md`` between the ``compat-table`` markers.

A column is ``pass`` when every rig test of it passed, else ``fail`` with the failed tests named
(a strict xfail of a known finding counts as a failure here: the table says what works).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from rig_install import newest_version, pinned  # noqa: E402 - after the path it is found on

ROOT = HERE.parent.parent
DOC = ROOT / "docs" / "compatibility.md"
BEGIN, END = "<!-- compat-table -->", "<!-- /compat-table -->"
#: The rig test file of each harness the rig drives so far.
TESTS = {"claude_code": (HERE / "test_rig_claude_code.py",),
         "codex": (HERE / "test_rig_codex.py", HERE / "test_rig_codex_permission.py", HERE / "test_rig_codex_plugin.py"),
         "pi": (HERE / "test_rig_pi.py", HERE / "test_rig_pi_live.py"),
         "omp": (HERE / "test_rig_omp.py", HERE / "test_rig_omp_live.py")}
TESTS["gemini_cli"] = (HERE / "test_rig_gemini_cli.py", HERE / "test_rig_gemini_cli_live.py")
TESTS["opencode"] = (HERE / "test_rig_opencode.py", HERE / "test_rig_opencode_live.py")
#: Which tests make each column (a prefix of the test's name).
COLUMNS = {
    "import": ("test_transcript_imports_with_no_skipped_line", "test_the_model_gets_each_calls_output"),
    "live": ("test_live_equals_import", "test_event_fingerprints_agree", "test_input_sources",
             "test_subagent_has_its_own_trace", "test_mark_is_recorded_live", "test_tool_results_name_their_tools",
             "test_a_subagent_is_linked_live_as_on_import", "test_codex_installs_the_folder_and_runs_its_hooks"),
    "deny": ("test_deny_is_honoured", "test_deny_is_blocked", "test_a_denied_permission_request_is_honoured",
             "test_the_plugins_deny_is_honoured"),
    "hold": ("test_an_approved_hold_lets_the_call_run", "test_codex_asks_and_the_approved_call_is_not_held_twice"),
}


def run_rig(name: str, version: str) -> dict[str, bool]:
    """Each rig test of ``name`` at ``version``: passed or not (a skip or an error is not)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.xml"
        env = {**os.environ, f"REMATCH_RIG_VERSION_{name.upper()}": version, "REMATCH_REQUIRE_HARNESSES": "1"}
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *map(str, TESTS[name]),
                        f"--junitxml={report}"], cwd=ROOT, env=env, capture_output=True, timeout=1800)
        out: dict[str, bool] = {}
        for case in ET.parse(report).iter("testcase"):
            bad = any(child.tag in ("failure", "error", "skipped") for child in case)
            out[case.get("name", "")] = not bad
        return out


def cell(results: dict[str, bool], prefixes: tuple[str, ...]) -> str:
    """``pass``, or ``fail:`` and the failed tests."""
    mine = {k: v for k, v in results.items() if k.startswith(prefixes)}
    if not mine:
        return "n/a"  # the harness lacks it, or rematch has no live capture for it
    failed = sorted(k for k, v in mine.items() if not v)
    return "pass" if not failed else "fail: " + ", ".join(f"`{f}`" for f in failed)


def table(only: list[str] | None = None) -> str:
    """The markdown table, one row per harness version tried (of the harnesses ``only`` names, else all)."""
    rows = ["| harness | version | " + " | ".join(COLUMNS) + " |", "|---|---|" + "---|" * len(COLUMNS)]
    for name in only or TESTS:
        h = pinned(name)
        versions = [(h.version, "pinned")]
        latest = newest_version(name)
        if latest != h.version:
            versions.append((latest, "newest"))
        else:
            versions = [(h.version, "pinned, newest")]
        for version, what in versions:
            results = run_rig(name, version)
            cells = " | ".join(cell(results, COLUMNS[c]) for c in COLUMNS)
            os.environ[f"REMATCH_RIG_VERSION_{name.upper()}"] = version
            try:
                package = pinned(name).package  # the package of that version (a harness may have moved)
            finally:
                del os.environ[f"REMATCH_RIG_VERSION_{name.upper()}"]
            rows.append(f"| {package} | {version} ({what}) | {cells} |")
    return "\n".join(rows) + "\n"


def main() -> int:
    """Print the table; with ``--write`` put it into docs/compatibility.md."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="update docs/compatibility.md")
    ap.add_argument("--only", action="append", choices=sorted(TESTS),
                    help="run this harness only (repeatable); --write then replaces its rows alone")
    args = ap.parse_args()
    text = table(args.only)
    print(text, end="")
    if args.write:
        doc = DOC.read_text()
        head, _, rest = doc.partition(BEGIN)
        old, _, tail = rest.partition(END)
        if args.only:
            # The other harnesses' rows stay; this run's rows take the place of the old ones.
            packages = tuple(f"| {pinned(n).package} |" for n in args.only)
            new = text.splitlines()[2:]
            kept = [r for r in old.strip("\n").splitlines() if not r.startswith(packages)]
            text = "\n".join(kept + new) + "\n"
        DOC.write_text(f"{head}{BEGIN}\n{text}{END}{tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
