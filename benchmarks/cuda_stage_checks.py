"""Do the CUDA figures add up? Four checks of the profiler on a GPU, per zoo model.

* ``sums``: the top-level stages' median CUDA times plus the GPU time between them (measured in
  the same timed forwards, from an enclosing range) against the CUDA time of plain, unprofiled
  forwards (events around the forward). Target: within 5%.
* ``trace``: one forward under ``torch.profiler`` that also carries the stages' CUDA events:
  for each stage call, the kernels, copies and memsets launched inside its range
  (:func:`profiling.trace.gpu_work_per_range`) against its event time. Target: within
  5% where the GPU is kept busy (see the ``busy`` column: kernel time over event time).
* ``memory``: the whole forward's ``cuda_peak_mb`` against
  ``torch.cuda.max_memory_allocated`` of a plain forward (target: within 1 MB), and every
  nested stage's absolute peak at most its parent's.
* ``syncs``: the profiler's synchronisations in traced ``profile_model`` runs with CUDA timers
  (target: one per timed forward, none inside a stage).

    python benchmarks/cuda_stage_checks.py [--models gmflow swiftnet] [--repeats 20]
        [--checks sums trace memory syncs] [--override input.size=[512,1024]] [--json out.json]

The tests in ``tests/test_cuda_checks.py`` call the same functions on small cases.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from profiling import Session, profile_model, stage  # noqa: E402
from profiling.stages.attach import attach_stages  # noqa: E402
from profiling.collectors.cuda_memory import CudaMemory  # noqa: E402
from profiling.collectors.timing import CudaTime  # noqa: E402
from profiling.collectors.trace_ranges import TraceRanges  # noqa: E402
from profiling.stages import call_model  # noqa: E402
from profiling.trace.export import export_trace  # noqa: E402
from profiling.trace.summary import (gpu_work_per_range, read_trace_events,  # noqa: E402
                                     sync_calls)

MODELS = ("faster_rcnn", "gmflow", "gmflow_refine", "gmflow_unet", "swiftnet", "swin_unet")
CHECKS = ("sums", "trace", "memory", "syncs")
#: The name of the range around the whole forward that the checks add.
WHOLE = "whole_forward"


class WholeForward(torch.nn.Module):
    """``model`` inside one more stage, :data:`WHOLE`, so the forward's own CUDA time and
    memory are measured by the same collectors as its stages."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        with stage(WHOLE):
            return self.model(*args, **kwargs)


def _wrap(model: torch.nn.Module, attach: Mapping[str, str]
          ) -> tuple[torch.nn.Module, dict[str, str]]:
    return WholeForward(model).eval(), {name: f"model.{path}" for name, path in attach.items()}


def plain_cuda_ms(model: torch.nn.Module, inputs: Any) -> float:
    """CUDA time of one unprofiled forward, from an event pair around it."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.inference_mode():
        torch.cuda.synchronize()
        start.record()
        call_model(model, inputs)
        end.record()
        torch.cuda.synchronize()
    return start.elapsed_time(end)


def check_sums(model: torch.nn.Module, inputs: Any, attach: Mapping[str, str], *,
               repeats: int = 20) -> dict[str, float]:
    """The top-level stages' CUDA times and the time between them against a plain forward's.

    Paired rounds: each runs one plain forward and one timed forward of the profiler (the
    model inside :class:`WholeForward`), so both see the same machine; the error is the median
    over rounds of ``(stages + between - plain) / plain``.
    """
    wrapped, wrapped_attach = _wrap(model, attach)
    timer = CudaTime()  # one for every round, as for every forward of a run: events pooled
    rounds = []
    for index in range(repeats + 2):
        plain = plain_cuda_ms(model, inputs)
        calls = profile_model(wrapped, inputs, collectors=[timer], warmup=0, repeats=1,
                              attach=wrapped_attach).timed[0]
        top = sum(c.metrics["cuda_time_ms"] for c in calls if c.depth == 1 and c.kind == "stage")
        whole = next(c.metrics["cuda_time_ms"] for c in calls if c.name == WHOLE)
        if index >= 2:  # two warm-up rounds
            rounds.append((plain, top, whole - top))
    plain, stages, between = (statistics.median(r[i] for r in rounds) for i in range(3))
    return {"plain_ms": plain, "stages_ms": stages, "between_ms": between,
            "error": statistics.median((t + b - p) / p for p, t, b in rounds),
            "top_level_stages": sum(1 for c in calls if c.depth == 1 and c.kind == "stage")}


def check_trace(model: torch.nn.Module, inputs: Any, attach: Mapping[str, str]
                ) -> list[dict[str, Any]]:
    """Per stage call of one traced forward: its CUDA event time and the GPU work launched
    inside its range."""
    timer = CudaTime()
    with torch.inference_mode(), attach_stages(model, attach):
        for _ in range(2):  # warm-up, the profiler's own start-up included
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as profiler:
                with Session([TraceRanges(), timer]) as session:
                    with session.forward():
                        call_model(model, inputs)
                        torch.cuda.synchronize()
    events = read_trace_events(export_trace(profiler))
    calls = [c for c in session.forwards[-1] if c.kind == "stage"]
    work = {(w.name, w.call_index): w for w in gpu_work_per_range(events, {c.name for c in calls})}
    rows = []
    for call in calls:
        found = work.get((call.name, call.call_index))
        event_ms = call.metrics["cuda_time_ms"]
        gpu_ms = found.gpu_ms if found else 0.0
        rows.append({"stage": call.name, "call_index": call.call_index, "depth": call.depth,
                     "event_ms": event_ms, "gpu_ms": gpu_ms,
                     "span_ms": found.span_ms if found else 0.0,
                     "busy": gpu_ms / event_ms if event_ms else 0.0,
                     "error": (gpu_ms - event_ms) / event_ms if event_ms else 0.0})
    return rows


class _CudaMemoryWithStarts(CudaMemory):
    """:class:`CudaMemory` that also keeps each call's allocation at entry, for absolute peaks."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: dict[int, int] = {}

    def enter(self, call) -> None:
        self.starts[call.index] = torch.cuda.memory_allocated(self.device)
        super().enter(call)


def check_memory(model: torch.nn.Module, inputs: Any, attach: Mapping[str, str]
                 ) -> dict[str, Any]:
    """The whole forward's peak against a plain forward's, and nested peaks against parents."""
    with torch.inference_mode():
        call_model(model, inputs)  # warm-up: cuDNN workspaces and caches
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        start = torch.cuda.memory_allocated()
        call_model(model, inputs)
        plain_peak_mb = (torch.cuda.max_memory_allocated() - start) / 1e6
    wrapped, wrapped_attach = _wrap(model, attach)
    collector = _CudaMemoryWithStarts()
    with torch.inference_mode(), attach_stages(wrapped, wrapped_attach):
        with Session([collector]) as session:
            with session.forward():
                call_model(wrapped, inputs)
    calls = session.forwards[-1]
    absolute = {c.index: collector.starts[c.index] / 1e6 + c.metrics["cuda_peak_mb"]
                for c in calls if "cuda_peak_mb" in c.metrics}
    above = [(c.name, absolute[c.index] - absolute[c.parent]) for c in calls
             if c.index in absolute and c.parent is not None
             and absolute[c.index] > absolute[c.parent] + 1e-9]
    whole = next(c for c in calls if c.name == WHOLE)
    return {"plain_peak_mb": plain_peak_mb, "whole_peak_mb": whole.metrics["cuda_peak_mb"],
            "difference_mb": whole.metrics["cuda_peak_mb"] - plain_peak_mb,
            "nested_above_parent": above, "stage_calls": len(absolute)}


def _traced_syncs(model: torch.nn.Module, inputs: Any, attach: Mapping[str, str], *,
                  repeats: int, keep: Optional[Path] = None) -> tuple[list[dict], int]:
    """The profiler's synchronisations (not those of the model's own operators) in a traced
    ``profile_model`` run with CUDA timers and ``repeats`` timed forwards, and how many of them
    fell inside a stage."""
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as profiler:
        profile_model(model, inputs, collectors=["cpu_time", "cuda_time", "trace_ranges"],
                      warmup=1, repeats=repeats, attach=attach)
    trace = export_trace(profiler)
    if keep is not None:
        keep.write_bytes(trace)
    events = read_trace_events(trace)
    syncs = sync_calls(events, outside_operators=True)
    stages = [e for e in events if e.get("cat") == "user_annotation"]
    inside = sum(1 for s in syncs for r in stages if r.get("tid") == s.get("tid")
                 and r["ts"] <= s["ts"] <= r["ts"] + r["dur"])
    return syncs, inside


def check_syncs(model: torch.nn.Module, inputs: Any, attach: Mapping[str, str], *,
                repeats: Sequence[int] = (2, 5), keep: Optional[Path] = None
                ) -> dict[str, Any]:
    """Synchronisations per timed forward, from the difference between two traced runs with
    different numbers of repeats (what a run does once, and the trace's own flush, cancel),
    and how many fell inside a stage. The model's own synchronisations (an operator that
    reads a GPU value on the host) are not the profiler's and are left out. ``keep``: write
    the first run's trace there (gzipped Chrome/Perfetto JSON)."""
    few, few_inside = _traced_syncs(model, inputs, attach, repeats=repeats[0], keep=keep)
    many, many_inside = _traced_syncs(model, inputs, attach, repeats=repeats[1])
    return {"syncs_per_forward": (len(many) - len(few)) / (repeats[1] - repeats[0]),
            "inside_stages": few_inside + many_inside,
            "sync_names": sorted({e["name"] for e in few + many})}


def zoo_case(name: str, overrides: Sequence[str] = ()) -> tuple[torch.nn.Module, Any, dict]:
    """A zoo model on CUDA as ``python -m zoo.profile`` builds it, with its inputs and attached
    stages."""
    from zoo.tools.job_inputs import prepare
    from zoo.tools.composition import compose_config

    cfg = compose_config([f"model={name}", "device=cuda", *overrides])
    model, inputs, attach, _ = prepare(cfg, torch.device("cuda"))
    return model, inputs, attach


def _summary_lines(name: str, figures: Mapping[str, Any]) -> list[str]:
    """The terminal lines of one model's checks (those that ran)."""
    lines = [f"{name}:"]
    sums = figures.get("sums")
    if sums:
        lines.append(f"  sums: plain {sums['plain_ms']:.3f} ms, stages "
                     f"{sums['stages_ms']:.3f} + between {sums['between_ms']:.3f} -> error "
                     f"{sums['error']:+.2%} ({sums['top_level_stages']} top-level stages)")
    trace = figures.get("trace")
    if trace:
        busy = [r for r in trace if r["busy"] >= 0.9 and r["event_ms"] >= 0.05]
        worst = max(busy, key=lambda r: abs(r["error"]), default=None)
        top = [r for r in trace if r["depth"] == 0]
        lines.append(f"  trace: {len(trace)} stage calls; top level: " + ", ".join(
            f"{r['stage']} {r['event_ms']:.3f}/{r['gpu_ms']:.3f} ms" for r in top))
        lines.append(f"  trace: {len(busy)} calls with the GPU >= 90% busy; worst error " + (
            f"{worst['error']:+.2%} ({worst['stage']})" if worst else "-"))
    memory = figures.get("memory")
    if memory:
        lines.append(f"  memory: plain peak {memory['plain_peak_mb']:.3f} MB, whole forward "
                     f"{memory['whole_peak_mb']:.3f} MB (diff {memory['difference_mb']:+.4f}); "
                     f"nested above parent: {len(memory['nested_above_parent'])} of "
                     f"{memory['stage_calls']}")
    syncs = figures.get("syncs")
    if syncs:
        lines.append(f"  syncs: {syncs['syncs_per_forward']:g} per timed forward "
                     f"({', '.join(syncs['sync_names'])}), {syncs['inside_stages']} inside a "
                     f"stage")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--checks", nargs="+", default=list(CHECKS), choices=CHECKS,
                        help="which checks to run (default: all)")
    parser.add_argument("--override", nargs="*", default=[],
                        help="zoo.profile overrides for every model, e.g. input.batch=4")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", type=Path, help="also write every figure here")
    parser.add_argument("--traces", type=Path,
                        help="write each model's traced profiler run (2 timed forwards) here")
    args = parser.parse_args()
    if args.traces:
        args.traces.mkdir(parents=True, exist_ok=True)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    report: dict[str, Any] = {"device": torch.cuda.get_device_name(),
                              "torch": torch.__version__, "overrides": args.override,
                              "models": {}}
    for name in args.models:
        model, inputs, attach = zoo_case(name, args.override)
        run = {"sums": lambda: check_sums(model, inputs, attach, repeats=args.repeats),
               "trace": lambda: check_trace(model, inputs, attach),
               "memory": lambda: check_memory(model, inputs, attach),
               "syncs": lambda: check_syncs(model, inputs, attach, keep=args.traces and
                                            args.traces / f"{name}_timed_forwards.json.gz")}
        figures = {check: run[check]() for check in CHECKS if check in args.checks}
        report["models"][name] = figures
        print("\n".join(_summary_lines(name, figures)))
        del model, inputs, run
        torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
