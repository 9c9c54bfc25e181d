"""One side of ``zoo.compare --run``: its overrides parsed, checked and prepared as a
:class:`~zoo.tools.job_description.ProfileJob`, every refusal naming the side (A or B)."""

from __future__ import annotations

import shlex
from typing import Sequence

from profiling import MissingExtra

from ..options import ConfigError
from .composition import checked_config
from .job_description import ProfileJob, prepare_job

__all__ = ["prepared_side"]


def prepared_side(overrides: str, side: str) -> ProfileJob:
    """The job of one ``--run`` side: ``overrides`` split as a shell would, refused when they
    set how or where a run is written, composed and checked once; a refusal names the side."""
    try:
        arguments = shlex.split(overrides)
        _refuse_run_settings(arguments)
        cfg = checked_config(arguments)  # composed and checked once
        return prepare_job(cfg, checked=True)
    except (ConfigError, MissingExtra) as error:  # the side named, the kind of error kept
        raise type(error)(f"--run {side}: {error}") from None
    except ValueError as error:  # shlex: an unbalanced quote
        raise ConfigError(f"--run {side}: cannot split {overrides!r} into overrides ({error}); "
                          f"quote each value whole, as a shell would") from None


def _refuse_run_settings(arguments: Sequence[str]) -> None:
    """Refuse what would set how or where a run is written rather than what it profiles:
    flags (``-m``, ``--multirun``, ``--config-name``) and Hydra's settings (``hydra.run.dir``,
    ``hydra.sweep.dir``, ``hydra/launcher=...``). Both sides run once, in this process, into
    ``--out``; Hydra never sees them, so they were dropped without a word."""
    for argument in arguments:
        key = argument.split("=", 1)[0].lstrip("+~")
        if argument.startswith("-"):
            raise ConfigError(f"{argument} is not accepted: each --run is one configuration, "
                              f"profiled once in this process (no sweep, no Hydra flags); "
                              f"accepted: overrides such as model.arch=resnet50")
        if key == "hydra" or key.startswith(("hydra.", "hydra/")):
            raise ConfigError(f"{argument} is not accepted: both runs are written into --out "
                              f"(a/ and b/), not where Hydra would put them; give --out DIR")
