"""The functions of ``rematch-omp`` that read the session format pi and omp share, answering pi's hooks.

pi is the upstream of omp: one file format (a session tree of JSON lines), one extension API.
What differs between the two is where each keeps its files (:mod:`.discover`) and the
harness name; the reading, translating, conversation and live translation are one, kept in
``rematch_omp`` (the plugin that read both before pi had its own name).
"""

from __future__ import annotations

from rematch_omp.actions import classify
from rematch_omp.conversation import items
from rematch_omp.live import denial, records
from rematch_omp.translate import translate
from rematch_omp.tree import read

__all__ = ["classify", "denial", "items", "read", "records", "translate"]
