"""Command-line plumbing shared by the entry points: override checks and one-line errors."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Optional, Sequence

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from profiling.errors import ProfilingError

__all__ = ["CONFIG_DIR", "check_overrides", "fail", "config_options", "compose_config"]

_GROUPS = ("model", "device", "input", "experiment")

#: The Hydra configs of the app.
CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"


def config_options(group: str) -> list[str]:
    """The options of a config group (the YAML files of ``configs/<group>/``)."""
    return sorted(p.stem for p in (CONFIG_DIR / group).glob("*.yaml"))


def fail(message: str, code: int = 2) -> None:
    """Print ``error: message`` on one line of stderr and exit with ``code``."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(code)


def compose_config(overrides: Sequence[str], config_name: str = "profile"):
    """Compose the app's config with ``overrides`` (outside of a Hydra run)."""
    if GlobalHydra.instance().is_initialized():
        GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose(config_name=config_name, overrides=list(overrides))


def _explain(error: Exception, overrides: Sequence[str], config_name: str) -> str:
    text = str(error)
    for group in _GROUPS:
        if f"'{group}/" in text or f"{group}/" in text.split("\n")[0]:
            value = next((o.split("=", 1)[1] for o in overrides
                          if o.split("=", 1)[0].lstrip("+~") == group), "?")
            return (f"unknown {group} '{value}'; choose one of: "
                    f"{', '.join(config_options(group))}")
    if "not in struct" in text or "Could not override" in text or "Could not append" in text:
        key = text.split("'")[1] if "'" in text else "?"
        parent, _, _ = key.rpartition(".")
        accepted = _accepted_keys(overrides, parent, config_name)
        return f"unknown option '{key}'; accepted{f' in {parent}' if parent else ''}: {accepted}"
    return text.strip().splitlines()[0]


def _accepted_keys(overrides: Sequence[str], parent: str, config_name: str) -> str:
    groups = [o for o in overrides if o.split("=", 1)[0] in _GROUPS]
    try:
        cfg = compose_config(groups, config_name)
        node = OmegaConf.select(cfg, parent) if parent else cfg
        return ", ".join(str(k) for k in node.keys() if str(k) != "_target_")
    except Exception:  # noqa: BLE001  (only an aid to the message)
        return "see --help"


def check_overrides(overrides: Sequence[str], config_name: str = "profile") -> Optional[str]:
    """Compose the config once per swept value; return a one-line problem or ``None``.

    Hydra's own errors span several lines and suggest stack traces; this turns the common ones
    (an unknown model or option, a malformed override) into one line saying what is accepted.
    """
    plain = [o for o in overrides if not o.startswith("hydra.") and not o.startswith("-")]
    try:
        parsed = OverridesParser.create().parse_overrides(plain)
    except Exception as error:  # noqa: BLE001  (the parser raises its own error types)
        return f"cannot parse the overrides: {str(error).splitlines()[0]}"
    first = [o.input_line if not o.is_sweep_override() else
             f"{o.get_key_element()}={next(iter(o.sweep_string_iterator()))}" for o in parsed]
    variants = [first]
    for i, override in enumerate(parsed):
        if override.is_sweep_override():
            for value in override.sweep_string_iterator():
                variants.append(first[:i] + [f"{override.get_key_element()}={value}"]
                                + first[i + 1:])
    for variant in variants:
        try:
            compose_config(variant, config_name)
        except Exception as error:  # noqa: BLE001  (any composition error is a bad input)
            return _explain(error, variant, config_name)
    return None


def run_checked(job: Callable[[], None], config_name: str = "profile") -> None:
    """Check the command line's overrides, then run the Hydra ``job``; one-line errors."""
    overrides = [a for a in sys.argv[1:] if "=" in a and not a.startswith("-")]
    if not any(a in ("--help", "-h", "--hydra-help", "--info", "-i", "--cfg", "-c")
               for a in sys.argv[1:]):
        problem = check_overrides(overrides, config_name)
        if problem:
            fail(problem)
    try:
        job()
    except ProfilingError as error:
        fail(str(error))
