"""The forward of a split analysis: one forward under the liveness collector, whose candidate
cuts :mod:`profiling.split` turns into a cut table (:func:`~profiling.split.cut_table`).

It runs here, beside :func:`~profiling.runner.profile_model`, because running a model under a
collector is the runner's part: :mod:`profiling.split` holds what the collector and the
cut table share (byte ranges, cuts, encodings, latency) and sits below the collectors.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

import torch

from ..collectors.liveness import Liveness
from ..errors import ProfilingError
from ..split.analysis import DEFAULT_CODECS, SplitAnalysis
from ..stages.attach import attach_stages, hookable_modules
from ..stages.guards import call_model, check_inputs
from ..stages.session import Session

__all__ = ["analyse_cuts", "module_marks"]


@contextmanager
def module_marks(model: torch.nn.Module, depth: int, liveness: Liveness) -> Iterator[None]:
    """Mark a candidate cut when each submodule down to ``depth`` (``layer1`` is 1,
    ``layer1.0`` is 2) returns, for as long as the block runs; the hooks are removed on the way
    out, also after an exception. A module called again gets ``path[i]`` for its call ``i``."""
    handles = []
    try:
        for path, module in hookable_modules(model):
            if path and path.count(".") < depth:
                handles.append(module.register_forward_hook(_mark_hook(path, liveness)))
        yield
    finally:
        for handle in handles:
            handle.remove()


def _mark_hook(path: str, liveness: Liveness):
    calls = [0]

    def hook(module, args, output):
        liveness.mark(path + (f"[{calls[0]}]" if calls[0] else ""), "module")
        calls[0] += 1
    return hook


def analyse_cuts(model: torch.nn.Module, inputs: Union[Sequence[Any], Mapping[str, Any]], *,
                 attach: Optional[Mapping[str, str]] = None,
                 codecs: Sequence[str] = DEFAULT_CODECS, depth: int = 0,
                 every_op: bool = False, codec: Optional[str] = None) -> SplitAnalysis:
    """Run one forward under the liveness collector and return its candidate cuts.

    Args:
        model: the model (stages in its code or ``attach`` make the top-level cuts).
        inputs: positional (a sequence) or keyword (a mapping) arguments of the forward.
        attach: extra stages attached to submodules, ``{stage: module_path}``.
        codecs: codecs of :data:`~profiling.split.CODECS` to measure (ignored on meta).
        depth: also cut after every module call down to this depth of the module tree.
        every_op: also cut after every operator.
        codec: a single codec instead of ``codecs`` (``None`` with ``codecs=()``: none).
    """
    check_inputs(inputs)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise ProfilingError(f"depth must be an integer >= 0, got {depth!r}")
    if codec is not None:
        codecs = (codec,)
    liveness = Liveness(inputs=inputs, codecs=codecs, every_op=every_op)
    with torch.inference_mode(), attach_stages(model, attach or {}), \
            module_marks(model, depth, liveness), Session([liveness]) as session:
        with session.forward():
            output = call_model(model, inputs)
            liveness.set_outputs(output)  # kept alive until the cut after the forward is taken
    del output  # the cuts are taken: the output's memory need not outlive the forward
    return SplitAnalysis(liveness.cuts, liveness.timeline, liveness.op_names,
                         liveness.op_flops, liveness.op_bytes,
                         [(call.name, call.call_index, first, last)
                          for call, first, last in liveness.stage_spans],
                         liveness.codecs if liveness.keep_content else ())
