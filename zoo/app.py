"""The profile job behind ``python -m zoo.profile``, callable from Python and tests."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import torch
from hydra.core.hydra_config import HydraConfig
from hydra.utils import instantiate
from omegaconf import DictConfig, ListConfig, OmegaConf

from profiling.aggregate import repeat_table
from profiling.errors import ProfilingError
from profiling.noise import noise_line
from profiling.reports.files import write_files
from profiling.reports.layers_table import layers_files, layers_table
from profiling.reports.metadata import host_name, run_metadata
from profiling.reports.modules_table import modules_files
from profiling.reports.payload_log import format_payload_log
from profiling.reports.repeats import TIMES_FILE
from profiling.reports.summary import format_summary, run_totals
from profiling.roofline import Ceilings, add_roofline_columns, ceilings_for_device, load_ceilings
from profiling.runner import ProfileResult, check_run_options, profile_model
from profiling.statistics import AutoRepeats

from .deploy import Deployment, roofline_dtype
from .errors import ConfigError
from .extras import optional_outputs
from .progress import ForwardProgress

__all__ = ["ProfileRun", "run_profile", "resolve_device", "build_model", "make_inputs",
           "prepare"]


@dataclass
class ProfileRun:
    """A finished run: its result, the files written and notes on what was done."""

    result: ProfileResult
    run_dir: Path
    files: list[Path]
    notes: list[str] = field(default_factory=list)


def resolve_device(device_config: Any) -> torch.device:
    """The ``torch.device`` of a ``device`` config node, checked for availability."""
    name = str(device_config.name)
    if name == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError("device=cuda was asked for, but this machine has no CUDA GPU "
                              "(torch.cuda.is_available() is False); use device=cpu or "
                              "device=meta")
        index = int(device_config.get("index", 0))
        if index >= torch.cuda.device_count():
            raise ConfigError(f"device.index={index} does not exist; this machine has "
                              f"{torch.cuda.device_count()} CUDA device(s)")
        return torch.device("cuda", index)
    if name in ("cpu", "meta"):
        return torch.device(name)
    raise ConfigError(f"unknown device '{name}'; choose device=cpu, device=cuda or device=meta")


def build_model(model_config: Any, seed: int) -> torch.nn.Module:
    """Instantiate the ``model`` config node with the weights' initialisation seeded."""
    torch.manual_seed(seed)
    try:
        return instantiate(model_config)
    except ProfilingError:
        raise
    except Exception as error:  # Hydra wraps the builder's own ProfilingError
        cause = error.__cause__ or error.__context__
        if isinstance(cause, ProfilingError):
            raise cause from None
        raise


def _input_size(cfg: DictConfig, model: torch.nn.Module) -> tuple[int, int]:
    size = cfg.input.size
    if size is None:
        return tuple(getattr(model, "default_input_size", (224, 224)))
    pair = list(size) if isinstance(size, ListConfig) else None
    if pair is None or len(pair) != 2 or not all(
            isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in pair):
        raise ConfigError(f"input.size must be [H, W] with positive integers, got "
                          f"{pair if pair is not None else repr(size)}")
    return pair[0], pair[1]


def _collectors(cfg: DictConfig) -> list[str]:
    names = cfg.get("collectors") or cfg.device.collectors
    return [str(name) for name in names]


def make_inputs(cfg: DictConfig, model: torch.nn.Module, device: torch.device
                ) -> tuple[tuple[Any, ...], list[str]]:
    """The seeded inputs of the run, padded if ``input.pad`` asks for it, and notes."""
    batch = int(cfg.input.batch)
    if batch < 1:
        raise ConfigError(f"input.batch must be at least 1, got {batch}")
    size = _input_size(cfg, model)
    fed = tuple(model.check_input_size(size, pad=bool(cfg.input.get("pad", False))))
    generator = torch.Generator().manual_seed(int(cfg.run.seed))
    inputs = model.example_inputs(batch, size, generator=generator, device=device)
    notes = []
    if fed != size:
        inputs = model.pad_inputs(inputs, fed)
        notes.append(f"input padded from {size[0]}x{size[1]} to {fed[0]}x{fed[1]} "
                     f"(edge replication, as InputPadder)")
    return inputs, notes


def prepare(cfg: DictConfig, device: torch.device
            ) -> tuple[torch.nn.Module, tuple[Any, ...], dict[str, str], list[str]]:
    """The model in eval mode on ``device``, its seeded inputs, its attached stages, and notes
    (padding; on the meta device, what the model assumes there)."""
    model = build_model(cfg.model, int(cfg.run.seed)).eval().to(device)
    inputs, notes = make_inputs(cfg, model, device)
    if device.type == "meta" and model.meta_note():
        notes.append(model.meta_note())
    model, inputs = Deployment.from_config(cfg.run).apply(model, inputs)  # run.dtype & co.
    return model, inputs, model.stage_paths(), notes


def run_repeats(run: Any) -> Union[int, AutoRepeats]:
    """``run.repeats`` as :func:`~profiling.runner.profile_model` takes it: a count, or for
    ``auto`` the stopping rule made of ``run.target_ci``, ``run.max_time_s`` and
    ``run.min_repeats``."""
    if run.repeats == "auto":
        return AutoRepeats(target_ci=float(run.get("target_ci", 0.02)),
                           max_time_s=float(run.get("max_time_s", 60.0)),
                           min_repeats=int(run.get("min_repeats", 5)))
    return int(run.repeats)


def run_profile(cfg: DictConfig, run_dir: Union[str, Path], *,
                print_summary: Optional[bool] = None) -> ProfileRun:
    """Build the model, profile it and write the run's files into ``run_dir``.

    Every input is checked before anything is written; the files appear all together at the
    end (see :func:`profiling.reports.files.write_files`).
    """
    device = resolve_device(cfg.device)
    repeats, warmup = run_repeats(cfg.run), int(cfg.run.warmup)
    check_run_options(warmup, repeats)  # before the model is built: fail fast
    collectors = _collectors(cfg)
    deployment = Deployment.from_config(cfg.run)
    deployment.check(device, timed=bool({"cpu_time", "cuda_time"} & set(collectors)),
                     warmup=warmup)
    model, inputs, attach, notes = prepare(cfg, device)
    running = deployment.running(device, str(cfg.model.name))
    with ForwardProgress(str(cfg.model.name)) as progress, running:
        result = profile_model(model, inputs, collectors=collectors, warmup=warmup,
                               repeats=repeats, attach=attach, progress=progress,
                               timed_model=deployment.timed_model(model))
    notes += deployment.notes(model)
    ceilings = _ceilings(cfg, device)
    if ceilings is not None and "op_counts" in result.collectors:
        add_roofline_columns(result.stages, ceilings, roofline_dtype(cfg))
    tables = _count_tables(model, result)
    with deployment.running(device, str(cfg.model.name)):
        files, extra_notes = optional_outputs(cfg, model, inputs, attach, result.stages,
                                              ceilings, layers=tables.get("layers.csv"))
    notes += extra_notes
    files.update(tables)
    files.update(_render(cfg, model, result, device, notes, ceilings))
    paths = write_files(run_dir, files)
    if print_summary if print_summary is not None else bool(cfg.get("summary", True)):
        print(format_summary(result.stages, times=repeat_table(result.timed),
                             totals=run_totals(result, model, inputs)))
        for note in notes:
            print(f"note: {note}")
        counter = result.collectors.get("op_counts")
        if counter is not None and counter.uncounted:
            print(f"note: no FLOP formula for {len(counter.uncounted)} operator(s), listed in "
                  f"meta.json under uncounted_ops: {', '.join(sorted(counter.uncounted))}")
        print(f"run directory: {Path(run_dir).resolve()}")
        if noise_line(result.noise):
            print(noise_line(result.noise))
    return ProfileRun(result, Path(run_dir), paths, notes)


def _job_overrides() -> list[str]:
    """The command-line overrides of the Hydra job running now (``[]`` outside Hydra)."""
    return list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []


def _render(cfg: DictConfig, model: torch.nn.Module, result: ProfileResult,
            device: torch.device, notes: Sequence[str], ceilings: Optional[Ceilings]
            ) -> dict[str, Any]:
    label = getattr(model, "payload_log_label", None)
    files: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    counter = result.collectors.get("op_counts")
    if counter is not None:
        extra["uncounted_ops"] = counter.uncounted
        extra["totals"] = counter.total.as_dict()
        if ceilings is not None:
            extra["roofline"] = {"ceilings": _ceilings_reference(cfg, ceilings),
                                 "device": ceilings.name, "dtype": roofline_dtype(cfg)}
    extra["deployment"] = Deployment.from_config(cfg.run).metadata(model)
    metadata = run_metadata(OmegaConf.to_container(cfg, resolve=True), str(device),
                            notes=list(notes), forward_ms=result.forward_ms, noise=result.noise,
                            parameters=sum(p.numel() for p in model.parameters()),
                            overrides=_job_overrides(), **extra)
    files.update({
        "stages.csv": result.stages,
        **({TIMES_FILE: repeat_table(result.timed)} if result.timed else {}),
        "payload.log": format_payload_log(result.events, result.stages, host=host_name(),
                                          device=device.type, label=label),
        "meta.json": json.dumps(metadata, indent=2, default=str) + "\n",
    })
    return files


def _count_tables(model: torch.nn.Module, result: ProfileResult) -> dict[str, Any]:
    """The layer and module tables of a run that counted operations (else none), with the
    module times when measured."""
    counter = result.collectors.get("op_counts")
    if counter is None:
        return {}
    module_time = result.collectors.get("module_time")
    last_call, total = ((module_time.last_call_seconds, module_time.total_seconds)
                        if module_time is not None else (None, None))
    return {**layers_files(layers_table(model, counter.modules, last_call),
                           counter.total.as_dict()),
            **modules_files(model, counter.modules, seconds=total)}


def _ceilings_reference(cfg: DictConfig, ceilings: Ceilings) -> str:
    """What ``zoo.plot`` can load the ceilings from again: the YAML's absolute path, or the
    preset's name."""
    chosen = cfg.get("roofline", {}).get("ceilings")
    if chosen and Path(str(chosen)).is_file():
        return str(Path(str(chosen)).resolve())
    return ceilings.name


def _ceilings(cfg: DictConfig, device: torch.device) -> Optional[Ceilings]:
    chosen = cfg.get("roofline", {}).get("ceilings")
    if chosen:
        return load_ceilings(str(chosen))
    if device.type == "cuda":
        return ceilings_for_device(torch.cuda.get_device_name(device))
    return None
