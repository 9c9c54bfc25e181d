"""Run a model under profiling: untimed measurement passes, warm-up, timed repeats."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from time import perf_counter_ns
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

import pandas as pd
import torch

from ..statistics.aggregate import aggregate_stages, repeat_table
from ..stages.attach import attach_stages
from ..collectors import PASSES, Collector, Metric, declared_metrics, make_collectors
from ..statistics.coverage import stage_coverage, with_other_calls
from ..errors import ProfilingError
from ..stages.guards import (FreshInputs, call_model, check_collector_devices,
                             check_collectors_argument, check_inputs, check_mode,
                             fresh_copy)
from ..stages.model_state import ModelState
from ..stages.payload import device_type_of
from ..stages.session import Session
from ..stages.markers import StageCall
from ..statistics.intervals import AutoRepeats
from .repeats import timed_repeats

__all__ = ["ProfileResult", "profile_model", "check_run_options", "with_more_repeats"]

#: the output before any pass has given it
_NOT_YET = object()


@dataclass
class ProfileResult:
    """What one profiling run measured.

    Attributes:
        calls: the stage calls of the reference forward (the first untimed pass, else the first
            timed forward), with payload and the metrics of every untimed pass merged in.
        events: ``(kind, call)`` in the order they happened in that forward (for logs).
        timed: the stage calls of each timed forward, with its ``other`` pseudo calls
            (:mod:`profiling.statistics.coverage`).
        forward_ms: host wall time of each timed forward (after a CUDA synchronize), in ms.
        stages: one row per stage call with every metric aggregated (see
            :func:`~profiling.statistics.aggregate_stages`), and the ``other`` rows (kind
            ``"other"``: what falls outside the stages at each depth,
            :mod:`profiling.statistics.coverage`).
        output: what the model returned in its first forward, copied at once: exactly what
            one plain ``model(*inputs)`` returns, whatever later passes do to the model's state
            or to the tensors it returned. The first forward is always a plain one (the
            analysis pass, the first timed forward, or an extra forward before a counted or
            compiled one).
        collectors: the collector objects used, by name (e.g. the op counter's uncounted ops).
        notes: what the run had to do that the user should know (inputs restored, ...).
        noise: how noisy the timed forwards were (:func:`profiling.statistics.noise_report`, plus
            ``auto_repeats`` for ``repeats=AutoRepeats(...)``); ``{}`` without timed forwards.
        operator_times: a runtime run's operator breakdown (each stage call's runtime nodes
            and their median time), set by the runtime; see :attr:`operators`.
    """

    calls: list[StageCall]
    events: list[tuple[str, StageCall]]
    timed: list[list[StageCall]]
    forward_ms: list[float]
    stages: pd.DataFrame
    output: Any
    collectors: dict[str, Collector] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    noise: dict[str, Any] = field(default_factory=dict)
    operator_times: Optional[pd.DataFrame] = None

    @property
    def metrics(self) -> list[Metric]:
        """The metrics of the run's collectors as they declare them (name, unit, kind, how
        calls and repeats add up): what the reports show, each without code of its own."""
        return declared_metrics(self.collectors.values())

    @property
    def totals(self) -> Optional[dict[str, int]]:
        """The whole forward's counts (``macs``, ``flops``, ``bytes_read``, ...), or ``None``
        when operations were not counted."""
        return forward_totals(self.collectors.values())

    @property
    def coverage(self) -> dict[str, float]:
        """The share of the forward's ``time`` and ``flops`` inside named top-level stages
        (:func:`profiling.statistics.coverage.stage_coverage`), each only when measured."""
        return stage_coverage(self.stages, self.forward_ms, self.totals,
                              repeat_table(self.timed))

    @property
    def uncounted(self) -> dict[str, int]:
        """Calls per operator that ran but has no count formula (empty when not counted)."""
        return dict(self._provided("uncounted") or {})

    @property
    def operators(self) -> Optional[pd.DataFrame]:
        """Each stage call's operator breakdown (one row per call and operator: the op
        counter's counts, or a runtime's node times), or ``None`` when the run has none."""
        if self.operator_times is not None:
            return self.operator_times
        return self._provided("operators")

    @property
    def module_counts(self) -> Optional[dict[str, Any]]:
        """Per-module count records by module path (for the layer and module tables), or
        ``None`` when operations were not counted."""
        return self._provided("modules")

    @property
    def module_seconds(self) -> tuple[Optional[dict[str, float]], Optional[dict[str, float]]]:
        """Each module's last-call and total time in seconds (``module_time``), or
        ``(None, None)``."""
        return self._provided("last_call_seconds"), self._provided("total_seconds")

    def _provided(self, field: str) -> Any:
        """What the run's collector that declares ``field`` (``Collector.provides``) holds
        under that name, or ``None`` when no collector of the run provides it."""
        return next((getattr(collector, field) for collector in self.collectors.values()
                     if field in collector.provides), None)


def forward_totals(collectors: Iterable[Collector]) -> Optional[dict[str, Any]]:
    """The whole forward's value of each metric that ``collectors`` declare and total
    (``Collector.forward_totals``), in declaration order; ``None`` when none totals any."""
    totals: dict[str, Any] = {}
    for collector in collectors:
        values = collector.forward_totals()
        totals.update({metric.name: values[metric.name]
                       for metric in declared_metrics([collector]) if metric.name in values})
    return totals or None


def _passes(collectors: Sequence[Union[str, Collector]]
            ) -> tuple[list[tuple[str, list[Collector]]], list[Collector]]:
    """The untimed passes ``[(pass_name, collectors)]`` in :data:`PASSES` order, and the timed
    collectors; within a pass, outermost (lowest ``nesting_rank``) first."""
    names = [c for c in collectors if isinstance(c, str)]
    objects = make_collectors(names) + [c for c in collectors if not isinstance(c, str)]
    objects.sort(key=lambda c: c.nesting_rank)
    # the session, not a collector, records the payload: its pass runs even with no collector
    groups: dict[str, list[Collector]] = {"analysis": []} if "payload" in names else {}
    for collector in objects:
        groups.setdefault(collector.pass_name, []).append(collector)
    timing = groups.pop("timed", [])
    ranked = sorted(groups, key=lambda n: PASSES.index(n) if n in PASSES else len(PASSES))
    return [(name, groups[name]) for name in ranked], timing


def _fresh_arguments(fresh: FreshInputs, collectors: Sequence[Collector]) -> tuple[Any, bool]:
    """The next pass's copy of the inputs, and whether its tensors were copied for it; the
    pass's collectors follow the copies."""
    arguments, copied = fresh.next()
    for collector in collectors:
        collector.use_copies(fresh.copies)
    return arguments, copied


def _synchronize(device_type: str) -> None:
    if device_type == "cuda":
        torch.cuda.synchronize()


def _merge_metrics(reference: Sequence[StageCall], other: Sequence[StageCall]) -> None:
    by_key = {call.key: call for call in reference}
    for call in other:
        target = by_key.get(call.key)
        if target is not None:
            target.metrics.update(call.metrics)


def _untimed_passes(model: Callable, untimed: Sequence[tuple[str, list[Collector]]],
                    fresh: FreshInputs, state: ModelState, timed_model: Optional[Callable],
                    record_payload: bool, progress: Optional[Callable[[str, int, int], None]]
                    ) -> tuple[Any, Optional[list[StageCall]], list[tuple[str, StageCall]]]:
    """Run the untimed passes (and the plain forward before a counted or compiled one);
    return the first forward's output, the reference forward's calls and its events. The
    model's state is put back after each forward."""
    output: Any = _NOT_YET
    calls: Optional[list[StageCall]] = None
    events: list[tuple[str, StageCall]] = []
    if (untimed[0][0] == "counting" if untimed else timed_model is not None):
        # the output is the first forward's: a plain one, not a counted or compiled one
        arguments, _ = _fresh_arguments(fresh, ())
        with Session() as session, session.forward():  # no collector: it names a failure's stage
            output = fresh_copy(call_model(model, arguments))
        fresh.done(keep=True)
        state.restore()
    for index, (name, group) in enumerate(untimed):
        keep = output is _NOT_YET
        arguments, _ = _fresh_arguments(fresh, group)
        with Session(group, record_payload=record_payload and name == "analysis") as session:
            with session.forward():
                result = call_model(model, arguments)
        fresh.done(keep)
        if keep:
            output = fresh_copy(result)
        state.restore()
        if calls is None:
            calls, events = session.forwards[0], session.events
        else:
            _merge_metrics(calls, session.forwards[0])
        if progress:
            progress(name, index + 1, len(untimed))
    return output, calls, events


def _timed_forwards(forward: Callable, timing: list[Collector], fresh: FreshInputs,
                    state: ModelState, device_type: str, output: Any,
                    calls: Optional[list[StageCall]], events: list[tuple[str, StageCall]],
                    warmup: int, repeats: Union[int, AutoRepeats], clock: Callable[[], int],
                    progress: Optional[Callable[[str, int, int], None]]) -> tuple:
    """Run the warm-up and timed forwards; return ``(output, forward_ms, noise,
    timed_forwards, calls, events)``, the last two from the first timed forward when no
    untimed pass gave them. The model's state is put back after each forward, outside the
    timed span: checked in full after the loop's first forward (a read-back from the device),
    then only what the forwards were seen to change, without reading the device
    (:meth:`~profiling.stages.model_state.ModelState.restore_known_changes`). So a forward
    synchronises once, after its last launch, unless it changes the model's buffers: their
    copy back is then finished by a second synchronize before the next forward's clock."""
    idle = False  # whether the device has finished all work launched so far

    def step(i: int) -> int:
        nonlocal output, idle
        keep = output is _NOT_YET
        arguments, copied = _fresh_arguments(fresh, timing)
        if copied or not idle:  # copies and restores still queued would run on the clock
            _synchronize(device_type)
        start = clock()
        with timed.forward():
            result = call_model(forward, arguments)
            _synchronize(device_type)  # the one synchronisation of a forward
            stop = clock()
        fresh.done(keep)
        if keep:
            output = fresh_copy(result)
        queued = state.restore() if i == 0 else state.restore_known_changes()
        idle = not queued and not keep  # keeping the output queued its copy
        return stop - start

    with Session(timing) as timed:
        forward_ms, noise = timed_repeats(step, warmup, repeats, clock, progress)
    timed_forwards = timed.forwards[int(warmup):]
    if calls is None:
        calls, events = timed_forwards[0], timed.events
    return output, forward_ms, noise, timed_forwards, calls, events


def check_run_options(warmup: int, repeats: Union[int, AutoRepeats]) -> None:
    """Raise :class:`ProfilingError` unless ``warmup >= 0`` and ``repeats >= 1`` (or
    :class:`~profiling.statistics.AutoRepeats` with a positive target, time and minimum)."""
    if isinstance(repeats, AutoRepeats):
        if not (repeats.target_ci > 0 and repeats.max_time_s > 0 and repeats.min_repeats >= 1):
            raise ProfilingError(f"automatic repeats need target_ci > 0, max_time_s > 0 and "
                                 f"min_repeats >= 1, got {repeats}")
    elif int(repeats) < 1:
        raise ProfilingError(f"run.repeats must be at least 1, got {repeats}")
    if int(warmup) < 0:
        raise ProfilingError(f"run.warmup must be 0 or more, got {warmup}")


def profile_model(model: torch.nn.Module, inputs: Union[Sequence[Any], Mapping[str, Any]], *,
                  collectors: Sequence[Union[str, Collector]] = ("payload", "cpu_time"),
                  warmup: int = 1, repeats: Union[int, AutoRepeats] = 5,
                  attach: Optional[Mapping[str, str]] = None,
                  progress: Optional[Callable[[str, int, int], None]] = None,
                  timed_model: Optional[Callable] = None, train: bool = False,
                  clock: Callable[[], int] = perf_counter_ns) -> ProfileResult:
    """Profile ``model(*inputs)`` stage by stage.

    Each collector runs in the pass its ``pass_name`` names: one untimed forward for the
    analysis (payload, tensor and CUDA memory), one for liveness, one for operation counts
    (whose interception would distort the others' memory), then ``warmup`` untimed and
    ``repeats`` timed forwards that carry the timers alone. Without timers there are no timed
    forwards (a meta run does each pass once). Everything runs under
    ``torch.inference_mode``. Stages named in ``attach`` (``{stage: module_path}``) are hooked
    only for the duration of the call, and no hook, mode or session outlives it, even on an
    error.

    Args:
        model: any module (or callable) whose forward is marked with stages or attached ones.
        inputs: positional arguments (a sequence) or keyword arguments (a mapping).
        collectors: registered names (:func:`profiling.collectors.registered_collectors`) and
            ``"payload"``, or collector objects.
        warmup: untimed forwards before the timed ones (>= 0).
        repeats: timed forwards (>= 1), or :class:`~profiling.statistics.AutoRepeats` to
            repeat until the forward median's 95% interval is narrow enough or time is up.
        attach: extra stages attached to submodules by path.
        progress: called as ``progress(phase, done, total)`` after each forward.
        timed_model: what the warm-up and the timed forwards call instead of ``model``, such as
            ``torch.compile(model)`` (compiled in the warm-up, never timed); the untimed passes
            always run ``model`` eagerly, as their dispatch modes need.
        train: profile a model in training mode (refused otherwise). Each forward then runs
            as training would (BatchNorm normalises with the batch's statistics and updates
            its running ones, dropout draws), and, as in every mode, the model's buffers and
            the random generators are put back after each forward, outside the timed spans
            (:class:`~profiling.stages.model_state.ModelState`): every pass is the caller's
            one plain forward, and the model is left as it was given.
        clock: the timer of the timed forwards, in integer nanoseconds (tests pass a fake).

    Every pass sees the inputs as the caller gave them: each gets its own copy (tensors with
    their strides and views, containers, objects; tensors are copied again only after a pass
    changed them in place, which :attr:`ProfileResult.notes` then says), and the caller's
    tensors are never handed to the model. Copies are made outside the timed spans.
    """
    check_collectors_argument(collectors)
    check_inputs(inputs)
    check_mode(model, train)
    check_run_options(warmup, repeats)
    record_payload = "payload" in collectors
    untimed, timing = _passes(collectors)
    used = [c for _, group in untimed for c in group] + timing
    device_type = _bound(used, model, inputs)
    forward_ms: list[float] = []
    noise: dict[str, Any] = {}
    timed_forwards: list[list[StageCall]] = []
    fresh = FreshInputs(inputs)
    state = ModelState(model, device_type)
    try:
        with torch.inference_mode(), attach_stages(model, attach or {}):
            output, calls, events = _untimed_passes(model, untimed, fresh, state, timed_model,
                                                    record_payload, progress)
            if timing or calls is None:
                output, forward_ms, noise, timed_forwards, calls, events = _timed_forwards(
                    model if timed_model is None else timed_model, timing, fresh, state,
                    device_type, output, calls, events, warmup, repeats, clock, progress)
    finally:
        state.restore()  # the model is left as it was given, even after an exception
    timers = [metric for collector in timing for metric in collector.metrics]
    timed_forwards = [with_other_calls(forward, {metric: ms for metric in timers})
                      for forward, ms in zip(timed_forwards, forward_ms)]
    collectors_used = {c.name: c for c in used}
    return ProfileResult(
        calls=calls, events=events, timed=timed_forwards, forward_ms=forward_ms,
        stages=_stage_table(calls, timed_forwards, collectors_used), output=output,
        collectors=collectors_used, notes=_run_notes(fresh, state), noise=noise)


def _bound(collectors: Sequence[Collector], model: Any, inputs: Any) -> str:
    """The device type of the run, once every collector is checked to measure on it and
    bound to the model and its inputs."""
    device_type = device_type_of(model, inputs)
    check_collector_devices(collectors, device_type)
    for collector in collectors:
        collector.bind(model, inputs)
    return device_type


def _run_notes(fresh: FreshInputs, state: ModelState) -> list[str]:
    """What the run had to do that the user should know: inputs or parameters that the
    model changed in place."""
    notes = ["the model changes its inputs in place; every pass was given the original "
             "values"] if fresh.mutated else []
    if state.changed_parameters:
        notes.append("the model changes its parameters in place; the profile could not put "
                     "them back, and each pass saw the previous pass's")
    return notes


def _stage_table(calls: Sequence[StageCall], timed: Sequence[Sequence[StageCall]],
                 collectors: Mapping[str, Collector]) -> pd.DataFrame:
    reference = with_other_calls(calls, forward_totals(collectors.values()) or {})
    return aggregate_stages(reference, timed)


def with_more_repeats(result: ProfileResult, more: Sequence[ProfileResult],
                      noise: Optional[Mapping[str, Any]] = None) -> ProfileResult:
    """``result`` with the timed forwards of ``more`` (profiles of the same model and inputs,
    made later, for example in alternation with another model's) after its own, its stage
    table aggregated again over all of them, and ``noise`` when given."""
    timed = [*result.timed, *(forward for extra in more for forward in extra.timed)]
    forward_ms = [*result.forward_ms, *(ms for extra in more for ms in extra.forward_ms)]
    return replace(result, timed=timed, forward_ms=forward_ms,
                   stages=_stage_table(result.calls, timed, result.collectors),
                   noise=dict(noise) if noise is not None else result.noise)
