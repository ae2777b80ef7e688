"""Token prices: the table shipped with rematch (``report/data/prices.yml``), a user's file over it, and
the cost of one turn, exact.

Prices are read as :class:`~decimal.Decimal` (YAML floats parsed as decimals, never as binary floats) and
a turn's cost is ``tokens x price / 1,000,000`` in decimals, so a total over any number of turns is the
exact sum of its parts. A turn is priced the way ccusage reads usage: uncached input, cache writes, cache
reads and output each at their own price (Codex's input already has its cached part split off into
``cacheRead`` by the plugin); a kind without a price of its own is billed as input; a model the table does
not know has no cost at all (``None``), never zero.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

from rematch_trace.errors import yaml_mistake

#: The file in a data folder that overrides or extends the shipped table.
USER_FILE = "prices.yml"
_MILLION = Decimal(1_000_000)
#: A dated snapshot suffix (``-20250929``, ``-2025-09-29``) or ``-latest``: priced as the model it names.
_SNAPSHOT = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest)$")
_RATE_KEYS = ("input", "cache_write", "cache_write_1h", "cache_read", "output")
_MODEL_KEYS = frozenset({*_RATE_KEYS, "source", "aliases", "long_context"})
_LONG_KEYS = frozenset({*_RATE_KEYS, "above"})
#: The shipped table's ``as_of`` and the :func:`~rematch_trace.report.prices.source_key` of the text it
#: was read from: ``rematch stats`` prints the date without importing and running the YAML parser (about
#: 150 M instructions, an eighth of the command) while the shipped table is this very text. Any other text
#: (an edited table, a user's layer) is parsed as before; tests/report/test_stats_costs_tools.py says when
#: this pair no longer matches the shipped file.
SHIPPED_AS_OF = ("3830eaa101b91ddbc607c2be1c0e3c1a", "2026-11-30")
#: The shipped table's model names and aliases (lower case) that end in a snapshot date, for the same text
#: as :data:`SHIPPED_AS_OF`: folding a dated model id asks whether the table names it apart
#: (report/model_names.py), which ``rematch sessions`` answers without the YAML parse. The same test keeps it.
SHIPPED_DATED: frozenset[str] = frozenset()


class PriceError(Exception):
    """A price file that cannot be used (the message is one line and names the file)."""


class _Value:
    """A small immutable value: fields set once by ``__init__``, compared and hashed by their values.

    Hand-written, not attrs or dataclasses: every command loads a price table, and importing attrs is
    about a seventh of ``rematch sessions`` on 3,300 stored summaries; generating dataclasses' methods
    would still cost a listing more than the rest of this module (bench/listing.py).
    """

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._values()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"


class Rates(_Value):
    """USD per million tokens of each kind; ``None`` = billed as input."""

    __slots__ = ("cache_read", "cache_write", "cache_write_1h", "input", "output")
    input: Decimal
    output: Decimal
    cache_read: Decimal | None
    cache_write: Decimal | None
    #: The 1-hour cache write (Anthropic); ``None`` = billed as ``cache_write``.
    cache_write_1h: Decimal | None

    def __init__(self, input: Decimal, output: Decimal, cache_read: Decimal | None = None,
                 cache_write: Decimal | None = None, cache_write_1h: Decimal | None = None) -> None:
        _set = object.__setattr__
        _set(self, "input", input)
        _set(self, "output", output)
        _set(self, "cache_read", cache_read)
        _set(self, "cache_write", cache_write)
        _set(self, "cache_write_1h", cache_write_1h)

    def cost(self, inp: int, out: int, cache_read: int, cache_write: int, cache_write_1h: int = 0) -> Decimal:
        """The exact cost of these tokens; ``cache_write_1h`` of the ``cache_write`` tokens were written for an hour."""
        read = self.cache_read if self.cache_read is not None else self.input
        write = self.cache_write if self.cache_write is not None else self.input
        hour = min(max(cache_write_1h, 0), cache_write)
        write_1h = self.cache_write_1h if self.cache_write_1h is not None else write
        return (inp * self.input + out * self.output + cache_read * read + (cache_write - hour) * write
                + hour * write_1h) / _MILLION


class Price(_Value):
    """One model's prices: the base rates, and the rates of a turn whose prompt is above ``above`` tokens."""

    __slots__ = ("above", "base", "long", "source")
    base: Rates
    source: str | None
    long: Rates | None
    above: int | None

    def __init__(self, base: Rates, source: str | None = None, long: Rates | None = None,
                 above: int | None = None) -> None:
        _set = object.__setattr__
        _set(self, "base", base)
        _set(self, "source", source)
        _set(self, "long", long)
        _set(self, "above", above)

    def cost(self, inp: int, out: int, cache_read: int, cache_write: int, cache_write_1h: int = 0) -> Decimal:
        """The exact cost of one turn's tokens (a long prompt bills the whole turn at the long rates)."""
        rates = self.base
        if self.long is not None and self.above is not None and inp + cache_read + cache_write > self.above:
            rates = self.long
        return rates.cost(inp, out, cache_read, cache_write, cache_write_1h)


class _Parsed:
    __slots__ = ("as_of", "digest", "models")

    def __init__(self, models: dict[str, Price], as_of: str, digest: str) -> None:
        self.models = models
        self.as_of = as_of
        self.digest = digest


class PriceTable:
    """Model name -> :class:`Price`, with where the prices came from and a digest of them all.

    Made by :func:`load`. With only the shipped table in force, its YAML is parsed when a price or the
    digest is first asked for: a command that reads stored summaries checks ``source`` alone and never
    loads the YAML parser (a tenth of ``rematch sessions``'s instructions).
    """

    __slots__ = ("_parsed", "_texts", "files", "source")

    def __init__(self, files: tuple[str, ...], source: str, texts: tuple[tuple[str, str], ...],
                 parsed: _Parsed | None = None) -> None:
        self.files = files
        #: A digest of the price files' texts, in order (:func:`~rematch_trace.report.prices.source_key`):
        #: what a stored summary was costed with, checked without parsing any YAML.
        self.source = source
        self._texts = texts  # (text, origin) of each layer, in order
        self._parsed = parsed

    def __repr__(self) -> str:
        return f"PriceTable(files={self.files!r}, source={self.source!r})"

    def _table(self) -> _Parsed:
        if self._parsed is None:
            self._parsed = _parse(self._texts)
        return self._parsed

    def _shipped_unparsed(self) -> bool:
        """Whether the shipped table's own text is the only layer and is not parsed yet (what it would
        give is then known from :data:`SHIPPED_AS_OF` and :data:`SHIPPED_DATED`)."""
        return self._parsed is None and len(self._texts) == 1 and self.source == SHIPPED_AS_OF[0]

    @property
    def models(self) -> Mapping[str, Price]:
        """Lower-cased model name (and alias) -> its price."""
        return self._table().models

    @property
    def as_of(self) -> str:
        """The layers' ``as_of`` dates, joined with `` / ``."""
        if self._shipped_unparsed():
            return SHIPPED_AS_OF[1]  # the shipped table's own text: its date is known without the parse
        return self._table().as_of

    @property
    def digest(self) -> str:
        """A digest of every price in the table."""
        return self._table().digest

    def names_dated(self, name: str) -> bool:
        """Whether the table has an entry (or alias) of the dated model name ``name`` (lower case) itself."""
        if self._shipped_unparsed():
            return name in SHIPPED_DATED  # the shipped table's own text: known without the parse
        return name in self.models

    def lookup(self, model: str) -> Price | None:
        """The price of a trace's model name (``provider/id`` or ``id``), or ``None`` if unknown.

        Tried in turn: the whole name, then the name without each leading ``provider/`` part, each as it
        is and without a dated snapshot suffix; names are compared in lower case. No guessing beyond that
        (a ``-max`` or ``-mini`` variant is not priced as its base model unless the table says so).
        """
        name = model.strip().lower()
        candidates = [name]
        while "/" in name:
            name = name.split("/", 1)[1]
            candidates.append(name)
        for c in candidates:
            for key in (c, _SNAPSHOT.sub("", c)):
                price = self.models.get(key)
                if price is not None:
                    return price
        return None

    def cost(self, model: str, inp: int, out: int, cache_read: int, cache_write: int,
             cache_write_1h: int = 0) -> Decimal | None:
        """The exact cost of one turn of ``model``, or ``None`` when the table has no price for it."""
        price = self.lookup(model)
        return None if price is None else price.cost(inp, out, cache_read, cache_write, cache_write_1h)


def _decimal(value: Any, where: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        raise PriceError(f"{where} is not a number")
    d = Decimal(value)
    if not d.is_finite() or d < 0:
        raise PriceError(f"{where} is not a price (a number, 0 or more)")
    return d


def _rates(table: Mapping[str, Any], where: str) -> Rates:
    for key in ("input", "output"):
        if key not in table:
            raise PriceError(f"{where} has no {key} price")
    opt = {k: _decimal(table[k], f"{where}.{k}") for k in ("cache_read", "cache_write", "cache_write_1h")
           if k in table}
    return Rates(_decimal(table["input"], f"{where}.input"), _decimal(table["output"], f"{where}.output"), **opt)


def _entries(doc: Mapping[str, Any], origin: str) -> dict[str, Price]:
    models = doc.get("models", {})
    if not isinstance(models, dict):
        raise PriceError(f"{origin}: models is not a table")
    out: dict[str, Price] = {}
    for name, entry in models.items():
        where = f"{origin}: models.{name}"
        if not isinstance(entry, dict):
            raise PriceError(f"{where} is not a table")
        unknown = sorted(set(entry) - _MODEL_KEYS)
        if unknown:  # a misspelt key would silently leave a price out
            raise PriceError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_MODEL_KEYS))})")
        long = entry.get("long_context")
        long_rates: Rates | None = None
        above: int | None = None
        if long is not None:
            if not isinstance(long, dict):
                raise PriceError(f"{where}.long_context is not a table")
            bad = sorted(set(long) - _LONG_KEYS)
            if bad:
                raise PriceError(f"{where}.long_context: unknown key {bad[0]!r}")
            above = long.get("above")
            if type(above) is not int or above <= 0:
                raise PriceError(f"{where}.long_context.above is not a whole number of tokens above 0")
            long_rates = _rates(long, f"{where}.long_context")
        source = entry.get("source")
        if source is not None and not isinstance(source, str):
            raise PriceError(f"{where}.source is not a string")
        price = Price(_rates(entry, where), source, long_rates, above)
        aliases = entry.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise PriceError(f"{where}.aliases is not a list of names")
        for key in (name, *aliases):
            out[key.strip().lower()] = price
    return out


@functools.cache
def _loader() -> Any:
    """YAML's safe loader (libyaml's when installed), reading floats as exact decimals; made on first use."""
    import yaml

    class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        """The safe loader with decimal floats."""

    def _float(loader: yaml.SafeLoader, node: yaml.Node) -> Decimal:
        text = str(loader.construct_scalar(node)).replace("_", "")  # type: ignore[arg-type]
        if text.lower().lstrip("+-") in (".nan", ".inf"):  # YAML's spelling; refused as a price later
            text = text.replace(".", "")
        try:
            return Decimal(text)
        except ArithmeticError:
            raise yaml.constructor.ConstructorError(None, None, f"{text!r} is not a decimal number",
                                                    node.start_mark) from None

    _Loader.add_constructor("tag:yaml.org,2002:float", _float)
    return _Loader


def _read(text: str, origin: str) -> tuple[dict[str, Price], str | None]:
    import yaml

    try:
        doc = yaml.load(text, Loader=_loader())  # a safe loader (C when available), with decimals for floats
    except yaml.YAMLError as err:
        raise PriceError(yaml_mistake(origin, err)) from None
    if not isinstance(doc, dict):
        raise PriceError(f"{origin}: not a mapping with a models: section")
    as_of = doc.get("as_of")
    if as_of is not None and not isinstance(as_of, str):
        as_of = str(as_of)  # a bare YAML date
    return _entries(doc, origin), as_of


def _digest(models: Mapping[str, Price]) -> str:
    def rates(r: Rates | None) -> list[str | None] | None:
        return None if r is None else [str(r.input), str(r.output), str(r.cache_read), str(r.cache_write),
                                       str(r.cache_write_1h)]

    blob = orjson.dumps({k: [rates(p.base), rates(p.long), p.above] for k, p in sorted(models.items())})
    return hashlib.sha256(blob).hexdigest()[:16]


def shipped_text() -> str:
    """The text of the table shipped with rematch."""
    # Beside this module, as the package data is installed (importlib.resources costs a listing's start-up
    # as much as its YAML parser would).
    return (Path(__file__).parent / "data" / "prices.yml").read_text("utf-8")


def _parse(layers: tuple[tuple[str, str], ...]) -> _Parsed:
    """The table of ``layers`` ((text, origin), in order): a later entry replaces an earlier one."""
    models: dict[str, Price] = {}
    dates = []
    for i, (text, origin) in enumerate(layers):
        more, date = _read(text, origin)
        models.update(more)
        if date or i == 0:
            dates.append(date or "unknown")
    return _Parsed(models, " / ".join(dates), _digest(models))


def source_key(texts: list[str]) -> str:
    """A digest of price files' texts, in the order they are layered (:attr:`PriceTable.source`)."""
    h = hashlib.sha256()
    for text in texts:
        data = text.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "big") + data)
    return h.hexdigest()[:32]


def load(data_root: Path | None = None, extra: Path | None = None) -> PriceTable:
    """The shipped table, then ``<data_root>/prices.yml`` if it exists, then ``extra``: a later entry
    replaces an earlier one of the same name. A file that cannot be read or used is a :class:`PriceError`
    (a user's file is parsed here, so that it is said at once; the shipped table alone when first used)."""
    texts = [(shipped_text(), "the shipped price table")]
    files = ["(shipped)"]
    layers = [data_root / USER_FILE] if data_root is not None else []
    if extra is not None:
        layers.append(extra)
    for path in layers:
        if path is extra or path.exists():
            try:
                text = path.read_text("utf-8")
            except (OSError, UnicodeDecodeError) as err:
                raise PriceError(f"{path}: cannot be read ({getattr(err, 'strerror', None) or err})") from None
            texts.append((text, str(path)))
            files.append(str(path))
    table = PriceTable(tuple(files), source_key([t for t, _ in texts]), tuple(texts))
    if len(texts) > 1:
        table.digest  # noqa: B018  (parsed now: a user's file that cannot be used is said before any work)
    return table
