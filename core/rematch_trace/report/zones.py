"""The time zone of ``rematch stats --by``: named (IANA, ``--tz``) or the machine's own.

The machine's zone is what the C library would use: ``$TZ`` when set (a name, ``:name``, or empty
for UTC), else the zone ``/etc/localtime`` stands for (its name when it links into a zoneinfo
folder, as Debian's does), else UTC. Its name is kept with it, so an answer can say which zone it
used (``stats --json``'s ``tz``).
"""

from __future__ import annotations

import datetime as dt
import os
import zoneinfo

#: Where the machine's zone is read when ``$TZ`` is not set.
LOCALTIME = "/etc/localtime"


class ZoneError(ValueError):
    """A zone name that names no zone this machine knows."""


def named(name: str) -> dt.tzinfo:
    """The IANA zone ``name`` (``UTC``, ``Europe/Paris``), else :class:`ZoneError` saying why in one line."""
    if name.upper() == "UTC":
        return dt.timezone.utc
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise ZoneError(f"{name!r} is no time zone (an IANA name such as UTC or Europe/Paris)") from None


def local() -> tuple[str, dt.tzinfo]:
    """The machine's zone and its name (``UTC`` when none can be told)."""
    env = os.environ.get("TZ")
    if env is not None:
        name = env[1:] if env.startswith(":") else env
        if not name:
            return "UTC", dt.timezone.utc  # an empty TZ is UTC to the C library too
        try:
            return name, named(name)
        except ZoneError:
            # The C library falls back to UTC for a TZ it cannot read: so does this (the zone is named).
            return "UTC", dt.timezone.utc
    try:
        target = os.path.realpath(LOCALTIME)
        if "/zoneinfo/" in target:
            name = target.split("/zoneinfo/", 1)[1]
            try:
                return name, named(name)
            except ZoneError:
                pass
        with open(LOCALTIME, "rb") as f:
            return "localtime", zoneinfo.ZoneInfo.from_file(f, key="localtime")
    except (OSError, ValueError):
        return "UTC", dt.timezone.utc


def zone(name: str | None) -> tuple[str, dt.tzinfo]:
    """``--tz``'s zone and the name it is shown by: ``name``'s, else the machine's (:func:`local`)."""
    if name is None:
        return local()
    return ("UTC" if name.upper() == "UTC" else name), named(name)
