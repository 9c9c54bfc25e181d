"""Model-agnostic stage profiling for PyTorch forward passes.

Mark stages in model code with :func:`stage` and :func:`probe`, or attach them to submodules
with :func:`attach_stages`; open a :class:`Session` with collectors, or let
:func:`profile_model` run warm-up, repeats and aggregation.
"""

from .attach import attach_stages
from .errors import ProfilingError
from .payload import walk_payload
from .session import Session
from .stages import StageCall, active_session, is_counting, is_profiling, probe, stage

__all__ = ["stage", "probe", "Session", "StageCall", "attach_stages", "walk_payload",
           "active_session", "is_profiling", "is_counting", "ProfilingError"]
