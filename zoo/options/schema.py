"""Strict types for every option: one checker per kind of value.

Hydra reads ``key=no`` as the string ``"no"`` and OmegaConf would read it as ``False``; neither
is what a user who typed it meant to be sure of, and a string that is silently truthy once ran
pickles. Here a boolean is ``true`` or ``false`` and nothing else, an integer is an integer in
its range, and a list is a list. The app's options declare their checkers in
:mod:`.declared`; :func:`check_value` also serves the model options (typed by their declared
kinds and defaults on the command line, by the builders' annotations in Python). This module imports neither torch nor Hydra, so bad options are answered at once.
"""

from __future__ import annotations

import difflib
import math
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

from .errors import ConfigError

__all__ = ["Checker", "Boolean", "Integer", "Number", "Text", "Choice", "Registered",
           "ListOf", "Nullable", "AnyOf", "Anything", "Plain", "MappingOf",
           "check_value", "check_minimum",
           "checker_for_default", "checker_for_annotation", "as_checker", "suggest", "shown",
           "MAX_SEED"]

#: The largest seed ``torch.manual_seed`` takes as a signed 64-bit value.
MAX_SEED = 2 ** 63 - 1


class Checker:
    """A kind of value. ``accepts`` says what is accepted, in words."""

    accepts = "any value"

    def ok(self, value: Any) -> bool:
        """Whether ``value`` is of this kind."""
        return True


def shown(value: Any) -> str:
    """``value`` as it is typed in a config: ``null``, ``true``, ``'text'``, ``[1, 2]``."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(shown(item) for item in value) + "]"
    return repr(value) if isinstance(value, str) else str(value)


def check_value(name: str, value: Any, checker: Checker) -> None:
    """Raise :class:`.ConfigError` unless ``value`` is of the kind ``checker`` describes."""
    if not checker.ok(value):
        raise ConfigError(f"{name}={shown(value)} is not accepted; accepted: "
                          f"{checker.accepts}")


def check_minimum(minimum: int, **options: Any) -> None:
    """Raise :class:`~zoo.options.ConfigError` for the first of ``options`` (``name=value``)
    that is not an integer of at least ``minimum``; a sequence's entries are checked one by
    one (and it must not be empty)."""
    for name, value in options.items():
        is_sequence = isinstance(value, Sequence) and not isinstance(value, str)
        item = Integer(minimum=minimum)
        check_value(name, list(value) if is_sequence else value,
                    ListOf(item) if is_sequence else item)


class Anything(Checker):
    """Any value (options whose type the schema cannot know)."""


@dataclass(frozen=True)
class Boolean(Checker):
    """``true`` or ``false``: not ``yes``, ``no``, ``0``, ``1`` or ``"false"``."""

    accepts = "true or false"

    def ok(self, value: Any) -> bool:
        return isinstance(value, bool)


@dataclass(frozen=True)
class Integer(Checker):
    """An integer (not a boolean) in ``[minimum, maximum]``."""

    minimum: Optional[int] = None
    maximum: Optional[int] = None

    @property
    def accepts(self) -> str:  # type: ignore[override]
        if self.minimum is not None and self.maximum is not None:
            return f"an integer from {self.minimum} to {self.maximum}"
        if self.minimum is not None:
            return f"an integer >= {self.minimum}"
        return "an integer"

    def ok(self, value: Any) -> bool:
        return (isinstance(value, int) and not isinstance(value, bool)
                and (self.minimum is None or value >= self.minimum)
                and (self.maximum is None or value <= self.maximum))


@dataclass(frozen=True)
class Number(Checker):
    """A finite real number (an integer is one), above ``minimum`` (exclusive) if given."""

    above: Optional[float] = None

    @property
    def accepts(self) -> str:  # type: ignore[override]
        return "a finite number" + (f" > {self.above:g}" if self.above is not None else "")

    def ok(self, value: Any) -> bool:
        return (isinstance(value, (int, float)) and not isinstance(value, bool)
                and math.isfinite(value) and (self.above is None or value > self.above))


@dataclass(frozen=True)
class Text(Checker):
    """A non-empty string."""

    accepts = "a non-empty text"

    def ok(self, value: Any) -> bool:
        return isinstance(value, str) and bool(value.strip())


@dataclass(frozen=True)
class Choice(Checker):
    """One of ``values``."""

    values: tuple[Any, ...]

    @property
    def accepts(self) -> str:  # type: ignore[override]
        return "one of " + ", ".join(shown(v) if not isinstance(v, str) else v
                                     for v in self.values)

    def ok(self, value: Any) -> bool:
        return any(type(value) is type(v) and value == v for v in self.values)


def _runtime_names() -> tuple[str, ...]:
    from profiling.runtimes import registered_executors

    return tuple(registered_executors())


#: The registries a :class:`Registered` option names, each read when an option is checked.
_REGISTRIES: dict[str, Callable[[], tuple[str, ...]]] = {"runtimes": _runtime_names}


@dataclass(frozen=True)
class Registered(Checker):
    """One of ``fixed`` or of the names a registry holds when the value is checked (so that
    a plugin registered after import is accepted): ``registry`` keys :data:`_REGISTRIES`."""

    fixed: tuple[str, ...]
    registry: str

    @property
    def values(self) -> tuple[str, ...]:
        return (*self.fixed, *_REGISTRIES[self.registry]())

    @property
    def accepts(self) -> str:  # type: ignore[override]
        return Choice(self.values).accepts

    def ok(self, value: Any) -> bool:
        return Choice(self.values).ok(value)


@dataclass(frozen=True)
class ListOf(Checker):
    """A list (or tuple) of items of one kind, of ``length`` items if given, never empty;
    ``names`` (one per item) say what each item is in the accepted form."""

    item: Checker
    length: Optional[int] = None
    names: Optional[tuple[str, ...]] = None

    @property
    def accepts(self) -> str:  # type: ignore[override]
        if not self.length:
            return "a non-empty list of " + _plural(self.item.accepts)
        names = self.names or ("...",) * self.length
        return f"[{', '.join(names)}] with " + _plural(self.item.accepts)

    def ok(self, value: Any) -> bool:
        return (isinstance(value, Sequence) and not isinstance(value, (str, bytes))
                and len(value) > 0
                and (self.length is None or len(value) == self.length)
                and all(self.item.ok(v) for v in value))


_ADJECTIVES = ("non-empty", "finite")


def _plural(accepts: str) -> str:
    """``a finite number > 0`` -> ``finite numbers > 0``: the first noun takes the plural."""
    for article in ("an ", "a "):
        if accepts.startswith(article):
            words = accepts[len(article):].split(" ")
            noun = next(i for i, w in enumerate(words) if w not in _ADJECTIVES or
                        i == len(words) - 1)
            words[noun] += "s"
            return " ".join(words)
    return accepts


@dataclass(frozen=True)
class Plain(Checker):
    """A plain value: null, a boolean, a number, a text, or a list of these (never a mapping,
    so that nothing inside it can name code to run)."""

    accepts = "a number, a text, true, false, null or a list of these"

    def ok(self, value: Any) -> bool:
        scalar = (type(None), bool, int, float, str)
        return isinstance(value, scalar) or (
            isinstance(value, (list, tuple)) and all(isinstance(v, scalar) for v in value))


@dataclass(frozen=True)
class MappingOf(Checker):
    """A mapping with text keys and plain values (:class:`Plain`; e.g. more keyword arguments
    of a library's builder)."""

    accepts = "a mapping {key: value, ...} of plain values (numbers, texts, lists of them)"

    def ok(self, value: Any) -> bool:
        return isinstance(value, Mapping) and all(
            isinstance(k, str) and not k.startswith("_") and Plain().ok(v)
            for k, v in value.items())


@dataclass(frozen=True)
class Nullable(Checker):
    """``null`` (None) or a value of ``inner``'s kind."""

    inner: Checker

    @property
    def accepts(self) -> str:  # type: ignore[override]
        return f"null or {self.inner.accepts}"

    def ok(self, value: Any) -> bool:
        return value is None or self.inner.ok(value)


@dataclass(frozen=True)
class AnyOf(Checker):
    """A value that one of ``checkers`` accepts (``run.repeats``: a count or ``auto``)."""

    checkers: tuple[Checker, ...]

    @property
    def accepts(self) -> str:  # type: ignore[override]
        return " or ".join(checker.accepts for checker in self.checkers)

    def ok(self, value: Any) -> bool:
        return any(checker.ok(value) for checker in self.checkers)


def checker_for_default(default: Any) -> Checker:
    """The kind of value an option takes, judged from its default (``null``: a plain
    value)."""
    if isinstance(default, bool):
        return Boolean()
    if isinstance(default, int):
        return Integer()
    if isinstance(default, float):
        return Number()
    if isinstance(default, str):
        return Text()
    if isinstance(default, (list, tuple)) and default:
        return ListOf(checker_for_default(default[0]))
    if isinstance(default, Mapping):
        return MappingOf()
    return Nullable(Plain())


def checker_for_annotation(annotation: Any) -> Checker:
    """The kind of value a builder's parameter takes, judged from its type annotation."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Union or origin is types.UnionType:
        inner = [a for a in args if a is not type(None)]
        checker = checker_for_annotation(inner[0]) if len(inner) == 1 else Anything()
        return Nullable(checker) if type(None) in args else checker
    if origin is typing.Literal:
        return Choice(tuple(args))
    if annotation is bool:
        return Boolean()
    if annotation is int:
        return Integer()
    if annotation is float:
        return Number()
    if annotation is str:
        return Text()
    if origin in (list, tuple, Sequence, typing.Sequence) or annotation in (list, tuple):
        item = args[0] if args else Any
        return ListOf(checker_for_annotation(item) if item is not Any else Anything())
    if origin in (dict, Mapping) or annotation in (dict, Mapping):
        return MappingOf()
    return Anything()


def suggest(key: str, known: Sequence[str]) -> str:
    """``" (did you mean X?)"`` for the closest of ``known`` to ``key`` (``""`` if none)."""
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def as_checker(rule: Callable[[Any], bool], accepts: str) -> Checker:
    """A checker from a predicate and the words for what it accepts."""
    checker = _Rule(rule)
    checker.accepts = accepts
    return checker


class _Rule(Checker):
    def __init__(self, rule: Callable[[Any], bool]) -> None:
        self.rule = rule

    def ok(self, value: Any) -> bool:
        return bool(self.rule(value))
