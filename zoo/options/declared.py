"""Every option of ``python -m zoo.profile`` outside ``model``, declared once.

One :class:`Option` per option: its dotted key, its checker (:mod:`.schema`), its default and
a line of help. Everything else is derived from :data:`OPTIONS`: the defaults that Hydra
composes (:func:`option_defaults`, stored as the ``zoo_options`` and ``input/default`` configs
by :func:`zoo.tools.composition.store_declared_configs`; ``configs/profile.yaml`` only lists
them), the type checks (:data:`SCHEMA`, :func:`check_config`), the refusal lines (each
checker's ``accepts``) and the option list of ``--help`` (:func:`options_help`). The ``device``
options are declared here too (:data:`DEVICE_OPTIONS`), but their values come with the chosen
``configs/device/NAME.yaml``. A model's own options are its builder's keyword arguments
(:func:`zoo.model_options`, :mod:`zoo.tools.model_configs`); the ones every model takes on top
are :data:`MODEL_OPTIONS`.

Like the rest of the room, this module imports neither torch nor Hydra.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from profiling.runtimes import DEFAULT_CACHE_LIMIT

from .errors import ConfigError
from .schema import (MAX_SEED, AnyOf, Boolean, Checker, Choice, Integer, ListOf, MappingOf,
                     Nullable, Number, Plain, Registered, Text, check_value, checker_for_default,
                     shown, suggest)

__all__ = ["Option", "OPTIONS", "DEVICE_OPTIONS", "MODEL_OPTIONS", "NULL_DEFAULT_OPTIONS",
           "model_option_checker", "SCHEMA", "option_defaults", "options_help",
           "check_config"]


@dataclass(frozen=True)
class Option:
    """One option: ``key`` (dotted, as typed: ``run.warmup``), the ``checker`` of its values,
    its ``default`` and one line of ``help`` (what it does; the checker says what is
    accepted)."""

    key: str
    checker: Checker
    default: Any = None
    help: str = ""


_DTYPES = ("float32", "float16", "bfloat16", "int8")
_COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")
_SIZE = ListOf(Integer(minimum=1), length=2, names=("height", "width"))

#: The app's options, in the order of the composed config and of ``--help``.
OPTIONS: tuple[Option, ...] = (
    Option("input.size", Nullable(_SIZE), None,
           "[H, W] of the input; null: the model's default size"),
    Option("input.batch", Integer(minimum=1), 1,
           "items per batch (images, image pairs or clips, as the model takes)"),
    Option("input.pad", Boolean(), False,
           "pad a size the model cannot take up to the next one it can (edge replication)"),
    Option("input.images", Nullable(AnyOf((Text(), ListOf(Text())))), None,
           "real images instead of random values: sample (shipped), a file, a folder or a "
           "list of them (docs/inputs.md); null: seeded random values"),
    Option("input.max_pixels", Integer(minimum=1), 100_000_000,
           "the most pixels (width x height x frames) an image file may declare; larger ones "
           "are refused before decoding"),
    Option("input.frames", Nullable(Integer(minimum=1)), None,
           "frames per clip of a video model; null: the library's (16 for r3d_18)"),
    Option("run.warmup", Integer(minimum=0), 1, "untimed forwards before the measured ones"),
    Option("run.repeats", AnyOf((Integer(minimum=1), Choice(("auto",)))), 5,
           "measured forwards, the statistics are over these; auto: until run.target_ci, "
           "run.max_time_s and run.min_repeats are met (docs/statistics.md)"),
    Option("run.target_ci", Number(above=0), 0.02,
           "repeats=auto: until the forward median's 95% interval is within this share"),
    Option("run.max_time_s", Number(above=0), 60,
           "repeats=auto: or until this many seconds of timed forwards have passed"),
    Option("run.min_repeats", Integer(minimum=1), 5, "repeats=auto: at least this many"),
    Option("run.seed", Integer(minimum=0, maximum=MAX_SEED), 0,
           "seeds the weights' initialisation and the inputs"),
    Option("run.overwrite", Boolean(), False,
           "replace a run (or sweep) already in hydra.run.dir (hydra.sweep.dir), whole"),
    Option("run.dtype", Choice(_DTYPES), "float32",
           "weights and floating inputs cast to it; int8: quantised by run.runtime "
           "(docs/deployed.md, docs/runtimes.md)"),
    Option("run.runtime", Registered(("torch",), "runtimes"), "torch",
           "what runs the timed forwards: torch, or a registered runtime (docs/runtimes.md)"),
    Option("run.export_cache", Boolean(), True,
           "keep a runtime's exports in $XDG_CACHE_HOME/stagezoo/exports"),
    Option("run.export_cache_gb", Number(above=0), DEFAULT_CACHE_LIMIT / 1e9,
           "the export cache's bound in GB: past it, the least recently used exports go"),
    Option("run.autocast", Boolean(), False,
           "float32 weights under torch.autocast in run.dtype instead of cast"),
    Option("run.channels_last", Boolean(), False,
           "the model and 4-D inputs in torch.channels_last"),
    Option("run.compile", Boolean(), False,
           "torch.compile the timed forwards (compiled in the warm-up)"),
    Option("run.compile_mode", Choice(_COMPILE_MODES), "default", "torch.compile's mode"),
    Option("run.threads", Nullable(Integer(minimum=1)), None,
           "torch's intra-op threads for the run (meta.json: cpu_threads); null: torch's own"),
    Option("collectors", Nullable(ListOf(Text())), None,
           "what to measure (docs/collectors.md); null: the device's list"),
    Option("roofline.ceilings", Nullable(Text()), None,
           "device ceilings for the roofline columns: a preset (h100, a100, l4, rk3588, ...; "
           "docs/counting.md) or a file of python -m zoo.calibrate; null: the CUDA device's "
           "preset, none on the CPU"),
    Option("roofline.dtype", Nullable(Text()), None,
           "the type whose peak applies; null: run.dtype"),
    Option("summary", Boolean(), True, "print the per-stage summary in the terminal"),
    Option("plots", Boolean(), False, "also write plots (PNG) of the run"),
    Option("trace", Boolean(), False,
           "also write a gzipped torch.profiler trace with the stage names"),
    Option("report", Boolean(), False,
           "also write report.html, the run's page (needs plotly: stagezoo[report])"),
)

#: The ``device`` options: declared here, set by the chosen ``configs/device/NAME.yaml``.
DEVICE_OPTIONS: tuple[Option, ...] = (
    Option("device.name", Choice(("cpu", "cuda", "meta")), help="where the run computes"),
    Option("device.index", Integer(minimum=0), help="the CUDA device's index"),
    Option("device.collectors", ListOf(Text()), help="what to measure by default there"),
)

#: The options every registered model takes besides its builder's keyword arguments (which
#: are the model's own: :mod:`zoo.tools.model_configs`); ``zoo.create_model`` handles them.
MODEL_OPTIONS: tuple[Option, ...] = (
    Option("model.checkpoint", Nullable(Text()), None,
           "a local file of weights, loaded strictly (official keys mapped)"),
    Option("model.checkpoint_allow_pickle", Boolean(), False,
           "true only for a trusted file that weights_only loading refuses"),
    Option("model.stage_depth", Integer(), 1,
           "modules down to this depth of the module tree are stages too (1: the model's own)"),
    Option("model.stage_paths", Nullable(ListOf(Text())), None,
           "more stages, by dotted module path, e.g. [layer1.0, layer2]"),
)

_MODEL_CHECKERS = {option.key.split(".", 1)[1]: option.checker for option in MODEL_OPTIONS}

#: The declared kinds of the builders' options whose default is ``null`` (the default cannot
#: say it; each is stricter than its annotation), and of :data:`MODEL_OPTIONS` whose default
#: is; one name means one kind in every model, and a contract test keeps each entry as
#: strict as the builders' annotations.
NULL_DEFAULT_OPTIONS: dict[str, Checker] = {
    "num_classes": Nullable(Integer(minimum=1)),
    "arch_options": Nullable(MappingOf()),
    "img_mean": Nullable(ListOf(Number())),
    "img_std": Nullable(ListOf(Number(above=0))),
    **{name: checker for name, checker in _MODEL_CHECKERS.items()
       if isinstance(checker, Nullable)},
}


def model_option_checker(name: str, default: Any) -> Checker:
    """The kind of value the model option ``name`` takes: as declared in :data:`MODEL_OPTIONS`
    or, when its default is ``null``, in :data:`NULL_DEFAULT_OPTIONS`; else judged from its
    default."""
    if name in _MODEL_CHECKERS:
        return _MODEL_CHECKERS[name]
    if default is None:
        return NULL_DEFAULT_OPTIONS.get(name, Nullable(Plain()))
    return checker_for_default(default)


#: The checker of every declared option, by dotted key.
SCHEMA: dict[str, Checker] = {option.key: option.checker
                              for option in (*OPTIONS, *DEVICE_OPTIONS)}


def option_defaults() -> dict[str, Any]:
    """The declared defaults as a config tree (``{"run": {"warmup": 1, ...}, ...}``)."""
    tree: dict[str, Any] = {}
    for option in OPTIONS:
        *parents, name = option.key.split(".")
        node = tree
        for parent in parents:
            node = node.setdefault(parent, {})
        node[name] = list(option.default) if isinstance(option.default, tuple) \
            else option.default
    return tree


_KEY_WIDTH = 26
_LINE_WIDTH = 100


def options_help(indent: str = "  ") -> str:
    """The option list of ``--help``: ``KEY=DEFAULT`` and its help, then what is accepted,
    one entry per option, wrapped to 100 columns."""
    entries = []
    for option in OPTIONS:
        default = option.default if isinstance(option.default, str) else shown(option.default)
        head = f"{indent}{option.key}={default}"
        text = f"{option.help}; accepted: {option.checker.accepts}"
        following = " " * (len(indent) + _KEY_WIDTH)
        first = head.ljust(len(following)) if len(head) < len(following) - 1 else None
        lines = textwrap.wrap(text, _LINE_WIDTH, initial_indent=first or following,
                              subsequent_indent=following, break_on_hyphens=False,
                              break_long_words=False)
        entries.append("\n".join(lines if first else [head, *lines]))
    return "\n".join(entries)


#: Sections whose every key is declared (an undeclared key there is an unknown option).
_SECTIONS = ("run", "input", "roofline", "device")


def _flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and path.split(".")[0] in _SECTIONS and value:
            flat.update(_flatten(value, path + "."))
        else:
            flat[path] = value
    return flat


def check_config(config: Mapping[str, Any], model_defaults: Optional[Mapping[str, Any]] = None
                 ) -> None:
    """Check a composed config (a plain dict; ``hydra`` is skipped) against :data:`SCHEMA`.

    ``model_defaults`` are the chosen model's options with their defaults: a ``model`` key
    that is not among them is unknown, and a value is checked against the kind of its
    default. Raises a one-line :class:`~zoo.options.ConfigError` naming the first bad option.
    """
    flat = _flatten({k: v for k, v in config.items() if k not in ("hydra", "model")})
    for key, value in flat.items():
        if key not in SCHEMA:
            raise ConfigError(f"unknown option '{key}'{suggest(key, list(SCHEMA))}; accepted: "
                              f"{', '.join(sorted(SCHEMA))}")
        check_value(key, value, SCHEMA[key])
    if model_defaults is None:
        return
    for key, value in (config.get("model") or {}).items():
        if key not in model_defaults:
            options = [k for k in model_defaults if not k.startswith("_")]
            raise ConfigError(f"unknown option 'model.{key}'{suggest(key, options)}; "
                              f"accepted in model: {', '.join(options)}")
        if not key.startswith("_"):
            check_value(f"model.{key}", value, model_option_checker(key, model_defaults[key]))
