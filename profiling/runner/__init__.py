"""Running a model under profiling: the measurement passes, warm-up and timed repeats
(:func:`profile_model` gives a :class:`ProfileResult`), ``torch.compile`` with the stage
markers as graph boundaries, and the forward of a split analysis (:func:`analyse_cuts`)."""

from __future__ import annotations

from .._exports import lazy_exports

#: Each public name and the module that defines it.
_EXPORTS = {
    "ProfileResult": "passes", "profile_model": "passes", "check_run_options": "passes",
    "with_more_repeats": "passes",
    "analyse_cuts": "split_pass", "module_marks": "split_pass",
    "run_head": "split_run", "run_tail": "split_run", "HeadRun": "split_run",
    "TailRun": "split_run", "TailService": "split_service", "run_request": "split_service",
    "output_tensors": "split_service",
    "compile_model": "compiled", "compile_options": "compiled", "compile_report": "compiled",
    "CompileReport": "compiled", "cxx_compiler": "compiled", "COMPILE_MODES": "compiled",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
