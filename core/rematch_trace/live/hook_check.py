"""Whether the hook commands installed in a settings file can run: their interpreter and script exist."""

from __future__ import annotations

import os
import shlex
import shutil


def command_problem(command: str) -> str | None:
    """Why ``command`` (an installed hook's command line) cannot run, or ``None`` when it can.

    The program must exist and be executable (a path, or a name on ``PATH``); the fast client's
    script (``python -S -I <script> ...``) must exist too. A deleted virtual environment fails both.
    """
    try:
        argv = shlex.split(command)
    except ValueError as err:
        return f"cannot be split as a command line: {err}"
    if argv[:1] == ["exec"]:
        argv = argv[1:]  # the shell replaces itself with the client (so the harness is its parent)
    if not argv:
        return "an empty command"
    program = argv[0]
    if os.sep in program:
        if not os.path.isfile(program):
            return f"its interpreter {program} does not exist"
        if not os.access(program, os.X_OK):
            return f"its interpreter {program} is not executable"
    elif shutil.which(program) is None:
        return f"{program} is not on PATH"
    script = next((a for a in argv[1:] if not a.startswith("-")), None)
    if script is not None and script.endswith(".py") and not os.path.isfile(script):
        return f"its script {script} does not exist"
    return None


def service_state(data_root: os.PathLike[str] | str) -> tuple[bool, int | None]:
    """Whether the verdict service of the data folder runs, and its pid.

    The service holds an exclusive lock on ``run/serve.lock`` (its pid inside) while it runs:
    a lock this process can take means none runs, whatever pid the file still holds.
    """
    import fcntl
    from pathlib import Path

    from rematch_trace.live.paths import run_dir

    lock = run_dir(Path(data_root)) / "serve.lock"
    try:
        fd = os.open(lock, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False, None
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        pid = int(text) if text.isdigit() else None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True, pid
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False, None
    finally:
        os.close(fd)


#: What to do about a problem :func:`service_problems` names.
SERVICE_FIX = ("resume a paused service (kill -CONT PID) or restart it (kill PID, then rematch serve); a replaced "
               "socket or a rewritten run/policy means another process of your user tampered with rematch "
               "(docs/threat-model.md)")


def service_problems(data_root: os.PathLike[str] | str) -> list[str]:
    """What is wrong with the running verdict service of the data folder: a socket some other process answers,
    a stopped service, a policy note that is not what it loaded (:func:`service_identity.problems`)."""
    from pathlib import Path

    from rematch_trace.live.paths import run_dir
    from rematch_trace.live.service_identity import problems

    return problems(run_dir(Path(data_root)))

