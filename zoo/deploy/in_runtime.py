"""``run.runtime`` and ``run.dtype=int8``: the network as an inference runtime runs it.

:func:`check_runtime` refuses, with one line, what cannot run (a runtime that is not
installed, ``device=meta``, a deployment option that only PyTorch has, int8 in PyTorch);
:func:`profile_in_runtime` runs :func:`profiling.runtimes.profile_runtime` with the app's
options and says in notes what the int8 model costs in accuracy (docs/runtimes.md).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Sequence

import torch

from ..options import ConfigError

__all__ = ["check_runtime", "profile_in_runtime", "int8_metric", "runtime_coverage_hint",
           "export_identity", "EXPORT_FOLDER"]

_TORCH_ONLY = ("autocast", "channels_last", "compile")
#: The run folder's subfolder of the exported (and quantised) ONNX files.
EXPORT_FOLDER = "export"


def check_runtime(deployment: Any, device: torch.device) -> None:
    """Raise a one-line :class:`ConfigError` unless ``deployment`` (a
    :class:`~zoo.deploy.Deployment`) can run in its runtime on
    ``device`` (the runtime's packages installed, the options, dtypes and devices it takes,
    as its registered executor declares them: :mod:`profiling.runtimes.registry`)."""
    from profiling.runtimes import executor, registered_executors, require_runtime

    runtime = deployment.runtime
    if runtime == "torch":
        if device.type == "meta":
            return  # the analytical int8 view: nothing runs (Deployment.byte_view)
        quantising = [f"run.runtime={name}" for name, cls in registered_executors().items()
                      if "int8" in cls.dtypes]
        raise ConfigError(f"run.dtype=int8 needs an inference runtime that quantises the model: "
                          f"add {' or '.join(quantising)} "
                          "(pip install 'stagezoo[runtimes]'), or device=meta for the "
                          "analytical int8 view")
    if device.type == "meta":
        raise ConfigError(f"run.runtime={runtime} runs the exported model and device=meta "
                          f"computes nothing; use device=cpu, or run.runtime=torch")
    chosen = executor(runtime)
    if deployment.dtype not in chosen.dtypes:
        raise ConfigError(f"run.runtime={runtime} runs run.dtype={' or '.join(chosen.dtypes)}, "
                          f"got run.dtype={deployment.dtype}; use run.runtime=torch for it")
    used = [name for name in _TORCH_ONLY if getattr(deployment, name)]
    if used:
        raise ConfigError(f"run.{used[0]}=true is a PyTorch option and run.runtime={runtime} "
                          f"runs the exported model; set run.{used[0]}=false")
    require_runtime(runtime, deployment.dtype, f"run.runtime={runtime}")
    if device.type not in chosen.devices:
        others = " or ".join(f"run.runtime={name}" for name, cls in
                             registered_executors().items() if device.type in cls.devices)
        raise ConfigError(f"run.runtime={runtime} runs on device={' or '.join(chosen.devices)} "
                          f"here; use device={chosen.devices[0]}"
                          + (f" or {others} for device={device.type}" if others else ""))
    if device.type == "cuda" and deployment.dtype == "int8":
        raise ConfigError("run.dtype=int8 runs on device=cpu here (the quantised operators are "
                          "CPU kernels); use device=cpu")
    chosen.check_device(device.type)  # before the model is built: a GPU needs its provider


def _label_agreement(name: str, reference: Any, got: Any) -> dict[str, float]:
    """``{name: share}`` of the positions (samples, pixels) whose label (argmax over axis 1)
    is the same in ``got`` as in ``reference``, over the positions the reference decides:
    its best class ahead of the second by more than float32 round-off (1e-6 of its largest
    logit, that never below :data:`~profiling.runtimes.runtime_profile.OUTPUT_SCALE_FLOOR`).
    The logits of a network whose outputs are all near zero (random weights) are ordered by
    round-off, not by the network: there no position is decided and ``{name}_decided``, the
    share of decided positions, is 0."""
    import numpy as np
    from profiling.runtimes import OUTPUT_SCALE_FLOOR

    ordered = np.sort(reference, axis=1)
    margin = ordered[:, -1] - ordered[:, -2]
    decided = margin > 1e-6 * max(float(np.abs(reference).max()), OUTPUT_SCALE_FLOOR)
    if decided.all():
        return {name: float((reference.argmax(1) == got.argmax(1)).mean())}
    figures = {f"{name}_decided": float(decided.mean())}
    if decided.any():
        figures[name] = float((reference.argmax(1) == got.argmax(1))[decided].mean())
    return figures


def int8_metric(metric: Optional[str], reference: Any, outputs: Sequence[Any]
                ) -> dict[str, float]:
    """The task metric the model declares (:attr:`zoo.models.ZooModel.int8_task_metric`)
    between the float32 output and the int8 runtime's: ``top1_agreement`` for a classifier's
    logits ``[B, classes]``, ``pixel_agreement`` of the labels for a segmentation's logits
    ``[B, classes, H, W]`` (the first output: torchvision's ``{"out": ...}``),
    ``end_point_error_px`` for a flow ``[B, 2, H, W]`` (the last one the model returns);
    ``{}`` for none, or for outputs not of that form."""
    import numpy as np
    from torch.utils._pytree import tree_flatten

    expected = [t.float().cpu().numpy() for t in tree_flatten(reference)[0]
                if isinstance(t, torch.Tensor)]
    if not expected or not outputs:
        return {}
    first, got = expected[0], np.asarray(outputs[0], dtype=np.float32)
    if metric == "top1_agreement" and first.ndim == 2 and got.shape == first.shape:
        return _label_agreement(metric, first, got)
    if metric == "pixel_agreement" and first.ndim == 4 and first.shape[1] >= 2 and \
            got.shape == first.shape:
        return _label_agreement(metric, first, got)
    last, got = expected[-1], np.asarray(outputs[len(expected) - 1], dtype=np.float32)
    if metric == "end_point_error_px" and last.ndim == 4 and last.shape[1] == 2 and \
            got.shape == last.shape:
        return {metric: float(np.sqrt(((last - got) ** 2).sum(1)).mean())}
    return {}


#: Above this ratio of the profiled forward to the unprofiled one, the run says so.
PROFILER_OVERHEAD_NOTED = 1.05
#: Below this ratio the unprofiled forward was the slower one: noise, not the profiler.
PROFILER_OVERHEAD_NOISE = 0.95
#: A float32 runtime output further than this from PyTorch's, relative to the output's
#: largest value, is more than float32 round-off (the built-in runtimes stay near 1e-6).
FLOAT32_AGREEMENT = 1e-3
#: The same for a bfloat16 run (8 bits of mantissa: 0.4% per operator, accumulating).
BFLOAT16_AGREEMENT = 0.1


def warmup_note(runtime: str, noise: Mapping[str, Any]) -> Optional[str]:
    """What the run says of its warm-up when the runtime's forwards decided it
    (``noise["warmup"]``: :func:`profiling.runner.repeats.still_settling`): more untimed
    forwards than ``run.warmup`` asked, or forwards still getting faster when it stopped."""
    warmup = noise.get("warmup")
    if not warmup:
        return None
    made, asked = warmup["made"], warmup["asked"]
    if warmup["settled"] is None and made > asked:  # slow forwards: the time limit came first
        return (f"{runtime} ran {made} untimed forwards before the timed ones (run.warmup="
                f"{asked}), as many as its warm-up's time limit allowed: too few to tell "
                f"whether its forwards had stopped getting faster")
    if warmup["settled"] is False:
        return (f"{runtime}'s forwards were still getting faster after {made} untimed ones: "
                f"its times may be high (a larger run.warmup, or a quieter machine)")
    if made > asked:
        return (f"{runtime} ran {made} untimed forwards before the timed ones (run.warmup="
                f"{asked}): its forwards got faster until then")
    return None


def _speed_notes(info: dict[str, Any]) -> list[str]:
    """What the run should say about speed: int8 slower than float32 (both timed with the
    runtime's profiler off), and a runtime profiler that slowed the forward noticeably."""
    from profiling.statistics import ratio_value

    notes = []
    speedup, overhead = (ratio_value(info.get(key)) for key in ("int8_speedup",
                                                               "profiler_overhead"))
    # Only ratios are quoted: the paired rounds' absolute times come from sessions taking turns
    # (each forward after another session's, caches cold, spinning off), not the run's regime.
    if speedup is not None and speedup < 1:
        notes.append(f"int8 is slower than float32 in {info['runtime']} here: the int8 forward "
                     f"took {1 / speedup:.2f}x the float32 one (the quantised operators this "
                     f"CPU runs fast decide it; see docs/runtimes.md)"
                     + _interval_text(info.get("int8_speedup"), "float32/int8"))
    if overhead is not None and overhead > PROFILER_OVERHEAD_NOTED:
        notes.append(f"{info['runtime']}'s profiler made the forward {overhead:.2f}x slower "
                     f"here: the stage times and the total are the profiled ones, and the "
                     f"forward as deployed takes about {1 / overhead:.0%} of the total "
                     f"(docs/runtimes.md#speed-and-overhead)"
                     + _interval_text(info.get("profiler_overhead"), "profiled/unprofiled"))
    elif overhead is not None and overhead < PROFILER_OVERHEAD_NOISE:
        notes.append(f"the forward timed with {info['runtime']}'s profiler off was "
                     f"{1 / overhead:.2f}x the profiled one: this machine's timing noise "
                     f"exceeds the profiler's cost, so deployment."
                     + ("profiler_overhead and int8_speedup are no reliable figures"
                        if speedup is not None else "profiler_overhead is no reliable figure")
                     + " on this run (more run.repeats, or a quieter machine)")
    return notes


def _interval_text(entry: Any, ratio: str) -> str:
    """``; RATIO 95% interval LOW-HIGHx over N interleaved rounds`` of a paired ratio, or
    nothing (an older run's plain number, or too few rounds for an interval)."""
    if not isinstance(entry, dict) or entry.get("low") is None:
        return ""
    return (f"; {ratio} {entry['confidence']:.0%} interval {entry['low']:.3g}-{entry['high']:.3g}x "
            f"over {entry['rounds']} interleaved rounds")


def _output_notes(info: dict[str, Any], dtype: str, random_weights: bool) -> list[str]:
    """What the run says about the runtime's output against PyTorch's float32 output: the
    difference relative to the output's scale (never below :data:`OUTPUT_SCALE_FLOOR`, so
    that a network whose outputs are all near zero raises no alarm over a difference of
    1e-16), and whether it is more than the round-off of the precision that ran."""
    from profiling.runtimes import OUTPUT_SCALE_FLOOR, judged_difference

    if dtype == "int8":
        difference = ", ".join(f"{k} {v:.4g}" for k, v in info["int8_output"].items())
        return [f"int8 (static post-training quantisation, calibrated on "
                f"{info['calibration']}) against float32: {difference}"
                + ("; with random weights this is no accuracy figure" if random_weights
                   else "")]
    figures = info.get("output_difference") or {}
    if "max_abs_difference" not in figures:
        return []
    judged = judged_difference(figures)
    line = (f"{info['runtime']}'s {dtype} output against PyTorch's float32: max abs difference "
            f"{figures['max_abs_difference']:.3g}, {judged:.2g} of the output's scale "
            f"(its largest value {figures['reference_max_abs']:.3g}, at least "
            f"{OUTPUT_SCALE_FLOOR:g})")
    tolerance = BFLOAT16_AGREEMENT if dtype == "bfloat16" else FLOAT32_AGREEMENT
    if judged > tolerance:
        line += (f"; more than {dtype} round-off (>{tolerance:g}): the exported model "
                 f"does not compute what the PyTorch one does, so its stage times describe "
                 f"another network")
    return [line]


def _precision_note(info: dict[str, Any], dtype: str) -> str:
    """``executed in float32 (100% of node time)``: the precision the runtime really ran,
    as it reports it per node, against the run's dtype."""
    shares = info.get("executed_precision") or {}
    said = ", ".join(f"{kind} {share:.0%}" for kind, share in shares.items())
    floating = info.get("inference_precision", "unknown")
    return (f"run.dtype={dtype}: {info['runtime']} executed its floating operators in "
            f"{floating}" + (f"; node time by precision: {said}" if said else ""))


#: From this share of a runtime's node time in stages on, naming more stages cannot help.
MAPPED_ENOUGH = 0.9


def runtime_coverage_hint(deployed: dict[str, Any]) -> Optional[str]:
    """What the coverage warning of a runtime run says when nearly all the runtime's node time
    is in stages: the rest of the forward is the runtime's own work between nodes, which no
    stage can name (``None``: not a runtime run, or naming more stages would help)."""
    runtime, mapped = deployed.get("runtime", "torch"), deployed.get("mapped_share")
    if runtime == "torch" or mapped is None or mapped < MAPPED_ENOUGH:
        return None
    return (f"{100 * mapped:.1f}% of {runtime}'s node time is in them already: the rest is "
            f"{runtime}'s own work around its nodes (large for a small input or on a busy "
            f"machine), which no stage can name" +
            (" (the note 'run by' takes it apart)" if deployed.get("other_parts_ms") else ""))


def other_parts_text(deployed: Mapping[str, Any]) -> Optional[str]:
    """The ``other`` row taken apart where the runtime timed its run calls
    (``other_parts_ms``): ``a forward's medians: 0.02 ms in nodes of no stage, 0.41 ms between
    nodes inside onnxruntime's run call, 0.12 ms outside it`` (``None`` where it did not)."""
    parts, runtime = deployed.get("other_parts_ms"), deployed.get("runtime")
    if not parts:
        return None
    return (f"a forward's medians: {parts['unmapped_nodes']:.3g} ms in nodes of no stage, "
            f"{parts['between_nodes']:.3g} ms between nodes inside {runtime}'s run call, "
            f"{parts['outside_run']:.3g} ms outside it")


def export_identity(cfg: Any) -> dict[str, Any]:
    """What the export cache's key takes from the app's config: the model's name and every
    composed option of ``cfg.model`` (an option that steers the forward without changing the
    model's structure or weights, such as GMFlow's ``attn_splits_list`` or an entry of
    torchvision's ``arch_options``, changes the exported graph all the same)."""
    from omegaconf import OmegaConf

    return {"model": OmegaConf.to_container(cfg.model, resolve=True)}


def profile_in_runtime(cfg: Any, deployment: Any, model: torch.nn.Module,
                       inputs: Any, *, collectors: Sequence[str], warmup: int, repeats: Any,
                       attach: dict[str, str], progress: Optional[Callable] = None
                       ) -> tuple[Any, list[str], dict[str, bytes]]:
    """Profile in ``run.runtime``: the :class:`profiling.runtimes.RuntimeProfile`, the notes of the run (the runtime, the share of its time
    mapped to stages, int8 against float32) and the exported files for the run folder
    (``export/model.onnx``, and ``export/model.int8.onnx`` from ONNX Runtime's quantiser)."""
    import shutil
    from pathlib import Path

    from profiling.runtimes import default_cache_folder, make_workdir, profile_runtime

    workdir = make_workdir()
    try:
        profiled = profile_runtime(model, inputs, runtime=deployment.runtime,
                                   dtype=deployment.dtype, warmup=warmup, repeats=repeats,
                                   collectors=collectors, attach=attach, workdir=workdir,
                                   cache_folder=default_cache_folder()
                                   if cfg.run.get("export_cache", True) else None,
                                   cache_limit=int(cfg.run.export_cache_gb * 1e9),
                                   identity=export_identity(cfg), progress=progress)
        files = {f"{EXPORT_FOLDER}/{path.name}": path.read_bytes() for path in profiled.files}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    info = profiled.deployment
    for key in ("exported_file", "quantised_file"):
        if key in info:
            info[key] = f"{EXPORT_FOLDER}/{Path(info[key]).name}"
    notes = [info["export_cache_note"]] if info.get("export_cache_note") else []
    warmed = warmup_note(deployment.runtime, profiled.result.noise)
    other = other_parts_text(info)
    notes += ([warmed] if warmed else []) + _speed_notes(info) + [
        f"run by {info['runtime']} {info['version']} ({info['execution_provider']}), "
        f"{deployment.dtype}; {100 * (info.get('mapped_share') or 0):.1f}% of its node "
        f"time maps to stages, the rest and the runtime's own work is the 'other' row"
        + (f" ({other})" if other else ""),
        _precision_note(info, deployment.dtype)]
    if "parts" in info:
        info["parts"] = {path: f"{EXPORT_FOLDER}/{Path(file).name}"
                         for path, file in info["parts"].items()}
        in_torch = {path or "the whole model": why for path, why in info["in_torch"].items()}
        notes.append(f"{len(info['parts'])} part(s) exported and run by {info['runtime']} "
                     f"({', '.join(info['parts']) or 'none'}); the rest runs in PyTorch "
                     f"(stages.csv's engine column), as these did not export: "
                     + "; ".join(f"{path}: {why}" for path, why in in_torch.items()))
    if deployment.dtype == "int8":
        images = cfg.input.get("images")
        info["calibration"] = "input.images" if images else "the run's own seeded inputs"
        info["int8_output"].update(int8_metric(getattr(model, "int8_task_metric", None),
                                               profiled.result.output, profiled.outputs))
    notes += _output_notes(info, deployment.dtype, not cfg.model.get("checkpoint"))
    return profiled, notes, files
