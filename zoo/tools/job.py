"""The profile job behind ``python -m zoo.profile``, callable from Python and tests."""

from __future__ import annotations

import textwrap
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional, Union

import torch
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, ListConfig, OmegaConf

from profiling import add_context, require_extra
from profiling.counting import Ceilings, ceilings_for_device, load_ceilings
from profiling.files import write_folder
from profiling.reports import TRACE_FILE, RunRecord, format_summary, run_files, run_totals
from profiling.runner import ProfileResult, check_run_options, profile_model
from profiling.stages import iter_tensors
from profiling.statistics import AutoRepeats, noise_line

from .composition import check_composed, command_line_overrides
from ..deploy import TF32_NOTE, Deployment, roofline_dtype
from ..errors import ConfigError
from ..image_files import MAX_PIXELS
from ..images import image_inputs
from ..inputs import INPUT_KINDS, check_frames
from .progress import ForwardProgress
from ..registry import create_model
from ..user_values import check_plain_config
from ..runtime import profile_in_runtime, runtime_coverage_hint

__all__ = ["RunFolder", "ProfileJob", "prepare_job", "job_files", "write_job", "run_profile",
           "resolve_device", "build_model", "make_inputs", "prepare"]


@dataclass
class RunFolder:
    """The run folder a job wrote: where it is, its files, the result they were written from,
    notes on what was done, and the record the files hold (what
    :func:`profiling.reports.read_run` reads back)."""

    result: ProfileResult
    run_dir: Path
    files: list[Path]
    notes: list[str] = field(default_factory=list)
    record: Optional[RunRecord] = None


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


def build_model(model_config: Any, seed: int, device: Optional[torch.device] = None
                ) -> torch.nn.Module:
    """Instantiate the ``model`` config node with the weights' initialisation seeded.

    For ``device=meta`` (and no checkpoint) every parameter is put on the meta device as it is
    registered, so that its initialisation costs nothing, whatever the model's size. A builder
    that runs the model while building (torchvision's SSDlite probes its backbone's channels)
    is built on the CPU instead.
    """
    if device is not None and device.type == "meta" and not model_config.get("checkpoint"):
        try:
            with parameters_on_meta():
                return _instantiate(model_config, seed)
        except (NotImplementedError, RuntimeError) as error:
            if "meta" not in str(error):
                raise
    return _instantiate(model_config, seed)


@contextmanager
def parameters_on_meta() -> Iterator[None]:
    """While the block runs, every parameter a module registers is moved to the meta device.

    Other tensors a builder makes stay where they are made, so a builder that computes sizes
    from tensors (torchvision's RegNet) still works; ``nn.Module.register_parameter`` is
    restored on the way out, also after an exception.
    """
    original = torch.nn.Module.register_parameter

    def register_on_meta(module: torch.nn.Module, name: str, param: Any) -> None:
        if param is not None and not param.is_meta:
            param = type(param)(param.to("meta"), requires_grad=param.requires_grad)
        original(module, name, param)

    torch.nn.Module.register_parameter = register_on_meta
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = original


def _instantiate(model_config: Any, seed: int) -> torch.nn.Module:
    """Build with the shipped target, :func:`zoo.create_model`, from plain values that it
    checks against the builder's types; nothing in a value is ever instantiated."""
    options = OmegaConf.to_container(model_config, resolve=True) if isinstance(
        model_config, DictConfig) else dict(model_config)
    check_plain_config({"model": options}, "in the model's options")
    options.pop("_target_", None)
    torch.manual_seed(seed)
    return create_model(str(options.pop("name")), **options)


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
    """The inputs of the run in the form the model takes (:mod:`zoo.inputs`): seeded random
    ones, or the files of ``input.images`` converted as the model expects (:mod:`zoo.images`),
    padded if ``input.pad`` asks for it; and notes (the files, the rule, the padding)."""
    batch = int(cfg.input.batch)
    if batch < 1:
        raise ConfigError(f"input.batch must be at least 1, got {batch}")
    size = _input_size(cfg, model)
    fed = tuple(model.check_input_size(size, pad=bool(cfg.input.get("pad", False))))
    kind = getattr(model, "input_kind", "image")
    frames = check_frames(cfg.input.get("frames")) if kind == "clip" else None
    frames = frames or getattr(model, "default_frames", None)
    images = cfg.input.get("images")
    notes: list[str] = []
    if images is not None:  # an empty value is refused, never replaced by random inputs
        images = OmegaConf.to_container(images) if isinstance(images, ListConfig) else images
        inputs, notes = image_inputs(model, images, batch=batch, size=size, frames=frames,
                                     device=device,
                                     max_pixels=int(cfg.input.get("max_pixels", MAX_PIXELS)))
    else:
        generator = torch.Generator().manual_seed(int(cfg.run.seed))
        extra = {"frames": frames} if kind == "clip" else {}
        inputs = model.example_inputs(batch, size, generator=generator, device=device, **extra)
    if kind == "clip":
        notes.append(f"input: clips of {frames} frames ([B, C, T, H, W])")
    elif cfg.input.get("frames") is not None:
        notes.append(f"input.frames={cfg.input.frames} is unused: this model takes "
                     f"{INPUT_KINDS[kind]}, not clips")
    if fed != size:
        inputs = model.pad_inputs(inputs, fed)
        notes.append(f"input padded from {size[0]}x{size[1]} to {fed[0]}x{fed[1]} "
                     f"(edge replication, as InputPadder)")
    return inputs, notes


def prepare(cfg: DictConfig, device: torch.device, deployment: Optional[Deployment] = None
            ) -> tuple[torch.nn.Module, tuple[Any, ...], dict[str, str], list[str]]:
    """The model in eval mode on ``device``, its seeded inputs, its attached stages, and notes
    (padding; on the meta device, what the model assumes there), deployed as ``deployment``
    says (by default the one ``cfg.run`` describes)."""
    model = build_model(cfg.model, int(cfg.run.seed), device).eval().to(device)
    inputs, notes = make_inputs(cfg, model, device)
    if device.type == "meta" and model.meta_note():
        notes.append(model.meta_note())
    if deployment is None:
        deployment = Deployment.from_config(cfg.run)
    model, inputs = deployment.apply(model, inputs)  # run.dtype & co.
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


@contextmanager
def torch_threads(count: Optional[int]) -> Iterator[None]:
    """torch's intra-op threads set to ``count`` (``run.threads``) while the block runs, and
    restored after; ``None`` leaves torch's own choice."""
    if count is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@dataclass
class ProfileJob:
    """A run checked and built, ready to profile: what :func:`run_profile` does between
    reading the config and writing the folder, in two halves that a caller can interleave
    (``zoo.compare --run A --run B`` times two jobs in alternation). ``notes``, ``deployed``
    and ``extra_files`` gather what the profile adds to the run folder."""

    cfg: DictConfig
    device: torch.device
    model: torch.nn.Module
    inputs: tuple[Any, ...]
    attach: dict[str, str]
    notes: list[str]
    deployment: Deployment
    collectors: list[str]
    warmup: int
    repeats: Union[int, AutoRepeats]
    ceilings: Optional[Ceilings]
    threads: Optional[int] = None
    deployed: dict[str, Any] = field(default_factory=dict)
    extra_files: dict[str, Any] = field(default_factory=dict)

    def profile(self, *, collectors: Optional[list[str]] = None, warmup: Optional[int] = None,
                repeats: Optional[Union[int, AutoRepeats]] = None,
                progress: Any = None) -> ProfileResult:
        """Profile the job's model (in its runtime), with its options unless given here."""
        collectors = self.collectors if collectors is None else collectors
        warmup = self.warmup if warmup is None else warmup
        repeats = self.repeats if repeats is None else repeats
        cfg, deployment = self.cfg, self.deployment
        try:
            with torch_threads(self.threads), \
                    deployment.running(self.device, str(cfg.model.name)), \
                    deployment.byte_view(self.device, self.model):
                if deployment.runtime != "torch":
                    profiled, runtime_notes, files = profile_in_runtime(
                        cfg, deployment, self.model, self.inputs, collectors=collectors,
                        warmup=warmup, repeats=repeats, attach=self.attach, progress=progress)
                    self.notes += runtime_notes
                    self.extra_files.update(files)
                    self.deployed.update(profiled.deployment)
                    return profiled.result
                result = profile_model(self.model, self.inputs, collectors=collectors,
                                       warmup=warmup, repeats=repeats, attach=self.attach,
                                       progress=progress,
                                       timed_model=deployment.timed_model(self.model))
                # the compiler's graph counts exist only once the warm-up has compiled
                self.deployed.update(deployment.metadata(self.model))
                return result
        except BaseException as error:
            add_context(error, "input " + " + ".join(
                "x".join(map(str, t.shape)) for t in iter_tensors(self.inputs)))
            raise


def prepare_job(cfg: DictConfig, *, checked: bool = False) -> ProfileJob:
    """Check every option of ``cfg``, then build the model and its inputs (nothing written).

    ``checked``: ``cfg`` was checked already (:func:`~zoo.tools.composition.checked_config`, or the
    command line before Hydra composed it again), and is not checked twice."""
    if not checked:
        check_composed(cfg)
    device = resolve_device(cfg.device)
    repeats, warmup = run_repeats(cfg.run), int(cfg.run.warmup)
    check_run_options(warmup, repeats)  # before the model is built: fail fast
    collectors = _collectors(cfg)
    if cfg.get("report"):
        from .report import check_report_support

        check_report_support()  # before the profile: a missing plotly fails at once
    ceilings = _ceilings(cfg, device)  # a bad ceilings file fails before the profile
    if cfg.get("plots"):
        require_extra("matplotlib", "plots", "plots=true")
    deployment = Deployment.from_config(cfg.run)
    if cfg.get("trace") and deployment.runtime != "torch":  # whether or not it is installed
        raise ConfigError(f"trace=true traces the PyTorch forward with torch.profiler and "
                          f"run.runtime={deployment.runtime} runs the exported model; drop "
                          f"trace=true (stages.csv has the runtime's own node times per stage) "
                          f"or use run.runtime=torch")
    deployment.check(device, timed=bool({"cpu_time", "cuda_time"} & set(collectors)),
                     warmup=warmup)
    model, inputs, attach, notes = prepare(cfg, device, deployment)
    return ProfileJob(cfg, device, model, inputs, attach, notes, deployment, collectors, warmup,
                      repeats, ceilings, threads=cfg.run.get("threads"),
                      deployed=deployment.metadata(model))


def run_profile(cfg: DictConfig, run_dir: Union[str, Path], *,
                print_summary: Optional[bool] = None, checked: bool = False) -> RunFolder:
    """Build the model, profile it and write the run's files into ``run_dir``.

    Every input is checked before anything is written (unless ``checked``: see
    :func:`prepare_job`); the files appear all together at the end (see
    :func:`profiling.files.write_folder`).
    """
    job = prepare_job(cfg, checked=checked)
    if print_summary if print_summary is not None else bool(cfg.get("summary", True)):
        for warning in job.deployment.warnings(job.device):
            print(f"note: {warning}", flush=True)
    with ForwardProgress(str(cfg.model.name)) as progress:
        result = job.profile(progress=progress)
    return write_job(job, result, run_dir, print_summary=print_summary)


def job_files(job: ProfileJob, result: ProfileResult, run_dir: Union[str, Path]
              ) -> tuple[dict[str, Any], RunRecord]:
    """The files of the run folder of ``job``'s ``result`` (with the trace, when asked for),
    and the record they hold, for ``run_dir``; nothing is written."""
    cfg, model, device, deployment = job.cfg, job.model, job.device, job.deployment
    notes = [*job.notes, *deployment.notes(model, device)]
    dtype = roofline_dtype(cfg, device.type)
    if dtype == "tf32" and (cfg.get("roofline") or {}).get("dtype") is None:
        notes.append(TF32_NOTE)
    extra_files = dict(job.extra_files)
    if cfg.get("trace", False):
        from profiling.trace import trace_forward

        with deployment.running(device, str(cfg.model.name)):
            extra_files[TRACE_FILE] = trace_forward(model, job.inputs, attach=job.attach)
    ceilings = job.ceilings
    files, record = run_files(
        result, model, config=OmegaConf.to_container(cfg, resolve=True), notes=notes,
        ceilings=ceilings, roofline_dtype=dtype, plots=bool(cfg.get("plots")),
        report=bool(cfg.get("report")),
        ceilings_source=_ceilings_reference(cfg, ceilings) if ceilings is not None else None,
        metadata={"device": str(device), "overrides": _job_overrides(),
                  "options": _changed_options(cfg),
                  "checkpoint": getattr(model, "checkpoint_file", None),
                  "deployment": job.deployed}, directory=run_dir)
    files.update(extra_files)
    return files, record


def write_job(job: ProfileJob, result: ProfileResult, run_dir: Union[str, Path], *,
              print_summary: Optional[bool] = None) -> RunFolder:
    """Write the run folder of ``job``'s ``result`` into ``run_dir`` and print its summary
    (unless ``summary=false`` or ``print_summary=False``)."""
    cfg, model = job.cfg, job.model
    with torch_threads(job.threads):  # meta.json's cpu_threads: the run's
        files, record = job_files(job, result, run_dir)
    notes = record.notes
    run_dir = Path(run_dir)
    paths = write_folder(run_dir, files, overwrite=bool(cfg.run.get("overwrite", False)))
    if print_summary if print_summary is not None else bool(cfg.get("summary", True)):
        print(format_summary(record.stages, times=record.times, metrics=record.metrics,
                             totals=run_totals(result, model, job.inputs),
                             coverage=record.meta.get("coverage"), meta=record.meta,
                             coverage_hint=runtime_coverage_hint(job.deployed)
                             or COVERAGE_HINT))
        for note in notes:
            print(f"note: {note}")
        if result.uncounted:
            print(f"note: no FLOP formula for {len(result.uncounted)} operator(s), listed in "
                  f"meta.json under uncounted_ops: {', '.join(sorted(result.uncounted))}")
        print(f"run directory: {Path(run_dir).resolve()}")
        print(textwrap.fill("files written: " + ", ".join(
            str(path.relative_to(run_dir)) for path in paths), 119,
            subsequent_indent="  ", break_on_hyphens=False))
        if noise_line(result.noise):
            print(noise_line(result.noise))
    return RunFolder(result, run_dir, paths, notes, record)


#: What the coverage line suggests when too little of the forward is in named stages.
COVERAGE_HINT = ("name more with model.stage_paths=[a.b,c] or model.stage_depth=N "
                 "(docs/inputs.md)")


def _changed_options(cfg: DictConfig) -> list[str]:
    """The options of the Hydra job running now that differ from the defaults, as the run's
    page lists them (``model=faster_rcnn`` is left out where it is the default)."""
    overrides = _job_overrides()
    if not overrides:
        return []
    from .changed_options import changed_options

    return changed_options(overrides, cfg)


def _job_overrides() -> list[str]:
    """The command-line overrides of the Hydra job running now (``[]`` outside Hydra)."""
    return command_line_overrides(HydraConfig.get().overrides.task) \
        if HydraConfig.initialized() else []


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
