"""The app's Hydra configs, composed and checked once, before any work.

Where the configs are (:data:`CONFIG_DIR`), composing them outside of a Hydra run
(:func:`compose_config`), and the checks that every tool makes of its overrides and of the
composed config (:func:`checked_configs`, :func:`check_overrides`, :func:`check_composed`):
a problem is one :class:`~zoo.options.ConfigError` line that says what is accepted. The error
contract that turns it into exit 2 is :mod:`zoo.tools.cli`.

Like :mod:`zoo.tools.cli`, this module imports neither torch nor Hydra at import time.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from ..options import ConfigError

__all__ = ["CONFIG_DIR", "CONFIG_GROUPS", "config_options", "store_declared_configs",
           "compose_config", "check_overrides",
           "checked_configs", "checked_config", "check_composed", "check_before_composing",
           "composed", "composition_problem",
           "command_line_overrides", "hydra_value", "resolve_interpolations"]


def _config_dir() -> Path:
    """The Hydra configs: ``zoo/configs`` in an installed wheel (package data), else the
    checkout's ``configs/`` beside ``zoo/`` (a clone, or an editable install)."""
    package = Path(sys.modules[__name__.split(".")[0]].__file__).resolve().parent
    installed = package / "configs"
    return installed if installed.is_dir() else package.parent / "configs"


#: The Hydra configs of the app.
CONFIG_DIR = _config_dir()

#: The config groups (choose a YAML file of configs/GROUP/ by name: model=gmflow).
CONFIG_GROUPS = ("model", "device", "input", "experiment")
#: The groups every run needs (``~model`` on the command line is refused).
_REQUIRED = ("model", "device", "input")


def config_options(group: str) -> list[str]:
    """The options of a config group: the YAML files of ``configs/<group>/`` and the configs
    :func:`store_declared_configs` stores (``model``: every registered model; ``input``:
    ``default``)."""
    from .model_configs import model_configs

    stored = {"model": tuple(model_configs()), "input": ("default",)}.get(group, ())
    return sorted({*(p.stem for p in (CONFIG_DIR / group).glob("*.yaml")), *stored})


def store_declared_configs() -> None:
    """Store in Hydra's ConfigStore what is declared in code: the options' defaults
    (:func:`zoo.options.option_defaults`) as the configs that ``configs/profile.yaml``'s
    defaults list names, ``zoo_options`` (``run``, ``roofline`` and the top-level options) and
    ``input/default``; and each registered model's node from its builder's signature
    (``model/NAME``, :func:`~.model_configs.model_configs`). Every composition of the app's
    config calls it first; a launcher's worker process gets the store with Hydra's state."""
    from hydra.core.config_store import ConfigStore

    from ..options import option_defaults
    from .model_configs import model_configs

    defaults = option_defaults()
    store = ConfigStore.instance()
    store.store(group="input", name="default", node=defaults.pop("input"))
    store.store(name="zoo_options", node=defaults)
    for name, node in model_configs().items():
        store.store(group="model", name=name, node=node)


def compose_config(overrides: Sequence[str], config_name: str = "profile", hydra: bool = False):
    """Compose the app's config with ``overrides`` (outside of a Hydra run); with ``hydra``,
    its ``hydra`` node too."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from .resolvers import register_resolvers

    register_resolvers()
    store_declared_configs()
    if GlobalHydra.instance().is_initialized():
        GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose(config_name=config_name, overrides=list(overrides),
                       return_hydra_config=hydra)


def _explain(error: Exception, overrides: Sequence[str], config_name: str) -> str:
    from ..options import suggest

    text = str(error)
    for group in CONFIG_GROUPS:
        if f"'{group}/" in text or f"{group}/" in text.split("\n")[0]:
            value = next((o.split("=", 1)[1] for o in overrides
                          if o.split("=", 1)[0].lstrip("+~") == group), "?")
            return (f"unknown {group} '{value}'; choose one of: "
                    f"{', '.join(config_options(group))}")
    if text.startswith("Config group override must be a string or a list"):
        group = next((o.split("=", 1)[0].lstrip("+") for o in overrides
                      if o.split("=", 1)[0].lstrip("+") in CONFIG_GROUPS and "null" in o), "model")
        return (f"{group} takes the name of a config, not null; choose one of: "
                f"{', '.join(config_options(group))}")
    if "Could not append to config. An item is already at" in text:
        key = text.split("'")[1]
        return f"{key} is an option already: set it without '+' ({key}=VALUE)"
    if "not in struct" in text or "Could not override" in text or "Could not append" in text:
        key = text.split("'")[1] if "'" in text else "?"
        parent, _, _ = key.rpartition(".")
        accepted = _accepted_keys(overrides, parent, config_name)
        if parent and not accepted:  # the parent is a typo too: suggest from the top level
            parent, accepted = "", _accepted_keys(overrides, "", config_name)
        known = [f"{parent}.{k}" if parent else k for k in accepted]
        hint = suggest(key if parent else key.split(".")[0], known)
        listing = f"; accepted{f' in {parent}' if parent else ''}: {', '.join(accepted)}"
        return f"unknown option '{key}'{hint}{listing}"
    return text.strip().splitlines()[0]


def _accepted_keys(overrides: Sequence[str], parent: str, config_name: str) -> list[str]:
    from omegaconf import OmegaConf

    groups = [o for o in overrides if o.split("=", 1)[0] in CONFIG_GROUPS]
    try:
        cfg = compose_config(groups, config_name)
        node = OmegaConf.select(cfg, parent) if parent else cfg
        return [str(k) for k in node.keys() if str(k) != "_target_"]
    except Exception:  # noqa: BLE001  (only an aid to the message)
        return []


def _model_defaults(model_name: Any) -> Optional[dict]:
    """The options of model ``model_name`` with their defaults, as its builder declares them
    (``None`` for a name that no builder registers)."""
    from .model_configs import model_configs

    return model_configs().get(str(model_name))


def check_composed(cfg: Any) -> None:
    """Check a composed config against the option schema (:mod:`zoo.options.declared`); raise a
    one-line ``ConfigError``."""
    from omegaconf import OmegaConf

    from ..options import check_config, check_plain_config

    plain = OmegaConf.to_container(cfg, resolve=False)
    plain.pop("hydra", None)
    for group in _REQUIRED:
        if not isinstance(plain.get(group), dict):
            raise ConfigError(f"the {group} group is required and cannot be deleted (~{group}); "
                              f"choose one of: {', '.join(config_options(group))}")
    check_plain_config(plain)
    for key in plain:
        resolve_interpolations(cfg, key)
    model = plain.get("model") or {}
    check_config(plain, _model_defaults(model.get("name")))
    _check_ceilings(cfg)


def _check_ceilings(cfg: Any) -> None:
    """Load ``roofline.ceilings`` and find the peak of the run's type in it, before the work
    (they were first read when the run folder was written: a wrong name or type lost the
    timed run)."""
    roofline, run = cfg.get("roofline") or {}, cfg.get("run") or {}
    chosen = roofline.get("ceilings")
    if chosen is None:
        return
    from profiling import ProfilingError
    from profiling.counting import load_ceilings

    dtype = roofline.get("dtype") or (run.get("dtype") if run.get("dtype") != "float32"
                                      else None)
    try:
        ceilings = load_ceilings(str(chosen))
        if dtype is not None:
            ceilings.peak(str(dtype))
    except ProfilingError as error:
        raise ConfigError(f"roofline.ceilings={chosen}: {error}") from None


def resolve_interpolations(cfg: Any, key: str) -> None:
    """Resolve every interpolation under ``cfg[key]``; raise a one-line ``ConfigError`` for
    one that cannot be (an unset ``${oc.env:...}``, a missing key, a malformed one)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        node = cfg[key]
        if OmegaConf.is_config(node):
            OmegaConf.to_container(node, resolve=True)
    except (OmegaConfBaseException, ValueError, KeyError) as error:
        where = getattr(error, "full_key", None) or key
        raise ConfigError(f"{where}: cannot resolve the interpolation: "
                          f"{str(error).strip().splitlines()[0]}") from None


#: The groups that may be deleted (``~experiment``): every other option always has a value.
_OPTIONAL_GROUPS = ("experiment",)
_GRAMMAR = ("accepted: KEY=VALUE as Hydra's override grammar reads it (quote a value that "
            "holds spaces, non-ASCII letters or symbols: KEY='...')")


def _check_override_form(override: str) -> None:
    """Refuse, in one line saying what is accepted, an override that Hydra cannot parse, that
    deletes an option (``~run.repeats``: only ``~experiment`` may go), or that chooses no
    config of a group (``model=null``)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    name = override.partition("=")[0].lstrip("+~")
    if not name.strip():
        raise ConfigError(f"'{override}' names no option before '='; {_GRAMMAR}")
    try:
        parsed = OverridesParser.create().parse_override(override)
    except Exception as error:  # noqa: BLE001  (the parser raises its own types)
        raise ConfigError(_parse_problem(override, error)) from None
    if parsed.is_delete():
        if name in _REQUIRED:
            raise ConfigError(f"the {name} group is required and cannot be deleted (~{name}); "
                              f"choose one of: {', '.join(config_options(name))}")
        if name not in _OPTIONAL_GROUPS and not name.startswith(("hydra.", "hydra/")):
            raise ConfigError(f"{override}: options cannot be deleted, every option has a "
                              f"value; set it instead ({name}=VALUE, or {name}=null where "
                              f"null is accepted)")
    elif name in CONFIG_GROUPS and not parsed.is_sweep_override() and \
            not isinstance(parsed.value(), (str, list)):
        hint = " (leave it out for none)" if name in _OPTIONAL_GROUPS else ""
        raise ConfigError(f"{override} is not accepted; choose one of: "
                          f"{', '.join(config_options(name))}{hint}")


def _parse_problem(override: str, error: Exception) -> str:
    """One line for an override that Hydra's parser refused: why, the first character that
    is not ASCII (a look-alike letter typed or pasted), and what is accepted."""
    import unicodedata

    lines = [line.strip() for line in str(error).splitlines()]
    reason = next((line for line in lines[1:] if line and "^" not in line and
                   "hydra.cc" not in line), lines[0] if lines else type(error).__name__)
    foreign = next((c for c in override if not c.isascii()), None)
    named = "" if foreign is None else (
        f" ('{foreign}' is {unicodedata.name(foreign, 'U+%04X' % ord(foreign))}, not ASCII)")
    return f"cannot parse {override!r}: {reason}{named}; {_GRAMMAR}"


def _variants(overrides: Sequence[str]) -> list[list[str]]:
    """The overrides of each variant to check: every swept option at its first value, then
    each swept value in turn with the others at their first (each variant once)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(list(overrides))
    first = [o.input_line if not o.is_sweep_override() else
             f"{o.get_key_element()}={next(iter(o.sweep_string_iterator()))}" for o in parsed]
    variants = [first]
    for i, override in enumerate(parsed):
        if override.is_sweep_override():
            for value in override.sweep_string_iterator():
                variant = first[:i] + [f"{override.get_key_element()}={value}"] + first[i + 1:]
                if variant not in variants:
                    variants.append(variant)
    return variants


def composed(overrides: Sequence[str], config_name: str = "profile", hydra: bool = False
             ) -> Any:
    """:func:`compose_config`, with Hydra's multi-line errors (an unknown model or option, a
    malformed override) turned into one ``ConfigError`` line saying what is accepted."""
    try:
        return compose_config(overrides, config_name, hydra)
    except ConfigError:
        raise
    except Exception as error:  # noqa: BLE001  (any composition error is a bad input)
        raise composition_problem(error, overrides, config_name) from None


def composition_problem(error: Exception, overrides: Sequence[str],
                        config_name: str = "profile") -> ConfigError:
    """Hydra's error composing ``overrides`` (an unknown model or option; several lines) as
    one :class:`ConfigError` line saying what is accepted."""
    return ConfigError(_explain(error, overrides, config_name))


def _checked_variants(overrides: Sequence[str]) -> tuple[list[list[str]], list[Path]]:
    """The checks that compose nothing: each override's values never choose code, its form,
    and the experiment files each variant reads (bounded YAML). Returns the overrides of every
    variant (the first value of each swept option, then each swept value in turn), with the
    ``hydra.searchpath`` ones, and the search path's folders."""
    from ..options import check_override
    from .search_path import search_folders, search_path_overrides

    for override in overrides:
        if not override.startswith("-"):
            check_override(override)
    folders = search_folders(overrides)
    plain = [o for o in overrides if not o.startswith("hydra.") and not o.startswith("-")]
    searched = search_path_overrides(overrides)
    for override in plain:
        _check_override_form(override)
    try:
        variants = _variants(plain)
    except Exception as error:  # noqa: BLE001  (the parser raises its own error types)
        raise ConfigError(f"cannot parse the overrides: {str(error).splitlines()[0]}") from None
    for variant in variants:
        _check_experiments(variant, folders)
    return [[*variant, *searched] for variant in variants], folders


def check_before_composing(overrides: Sequence[str], config_name: str = "profile") -> None:
    """What ``python -m zoo.profile`` checks before Hydra composes the run's config (once; the
    job checks it, :func:`check_composed`): :func:`_checked_variants`, and a
    ``hydra.searchpath`` folder's Hydra settings, which Hydra would act on before the job
    (composed here for that, only when a folder is given)."""
    variants, folders = _checked_variants(overrides)
    for variant in variants if folders else []:
        _check_hydra_settings(variant, config_name)


def checked_configs(overrides: Sequence[str], config_name: str = "profile") -> list:
    """The config of every variant of ``overrides``, each composed and checked
    (:func:`check_composed`), before anything runs: what a sweep checks before its first job,
    and a tool that runs one configuration (:func:`checked_config`) runs.

    Raises:
        ConfigError: one line: what is wrong and what is accepted. Hydra's own errors span
            several lines and suggest stack traces.
    """
    variants, folders = _checked_variants(overrides)
    configs = []
    for variant in variants:
        cfg = composed(variant, config_name)
        check_composed(cfg)
        if folders:
            _check_hydra_settings(variant, config_name)
        configs.append(cfg)
    return configs


def checked_config(overrides: Sequence[str], config_name: str = "profile") -> Any:
    """The one config of ``overrides`` (a sweep is refused), composed once and checked once:
    what a tool that runs one configuration hands to :func:`zoo.tools.job.prepare_job` as
    checked."""
    configs = checked_configs(overrides, config_name)
    if len(configs) > 1:
        raise ConfigError(f"{' '.join(overrides)} is a sweep; give one value per option "
                          f"(python -m zoo.profile -m ... sweeps)")
    return configs[0]


def check_overrides(overrides: Sequence[str], config_name: str = "profile") -> Optional[str]:
    """The one-line problem of :func:`checked_configs`, or ``None``."""
    try:
        checked_configs(overrides, config_name)
    except ConfigError as error:
        return str(error)
    return None


def _check_hydra_settings(overrides: Sequence[str], config_name: str) -> None:
    """Refuse a Hydra setting that names code and that a file of a ``hydra.searchpath``
    folder changed (:func:`~.search_path.check_hydra_settings`)."""
    from .search_path import check_hydra_settings, hydra_choices

    composed = compose_config(overrides, config_name, hydra=True).hydra
    check_hydra_settings(composed, compose_config(hydra_choices(composed), config_name,
                                                  hydra=True).hydra)


def _check_experiments(variant: Sequence[str], folders: Sequence[Path]) -> None:
    """Check, before Hydra reads them, the experiment files that ``variant`` (one job's
    overrides) chooses, from the shipped configs or a ``hydra.searchpath`` folder."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from .experiment_files import check_experiment_file
    from .search_path import experiment_file

    for override in variant:
        if override.split("=", 1)[0].lstrip("+") != "experiment":
            continue
        try:
            value = OverridesParser.create().parse_override(override).value()
        except Exception:  # noqa: BLE001  (a malformed override is reported by the composition)
            continue
        for name in value if isinstance(value, list) else [value]:
            path = experiment_file(str(name), folders, CONFIG_DIR) if name is not None \
                else None
            if path is not None:
                check_experiment_file(path)


def command_line_overrides(task: Any) -> list[str]:
    """Hydra's ``overrides.task`` as the texts given on the command line, in order.

    Hydra keeps them in a config node, where the ``${...}`` of an override's text reads as an
    interpolation; resolved, an earlier value that a later one replaces
    (``summary=${oc.env:UNSET} summary=false``) would fail, while the later value wins
    everywhere else.
    """
    from omegaconf import OmegaConf

    texts = OmegaConf.to_container(task, resolve=False) if OmegaConf.is_config(task) else task
    return [str(text) for text in texts]


def hydra_value(overrides: Sequence[str], key: str) -> Optional[str]:
    """The value given to ``key`` (e.g. ``hydra.run.dir``) on the command line, or ``None``;
    the last one where it is given twice, as Hydra takes it."""
    for override in reversed(overrides):
        name, sep, value = override.partition("=")
        if sep and name.lstrip("+") == key:
            return value
    return None
