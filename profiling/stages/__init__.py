"""Marking a forward: stages and probes, the session behind them, stages attached by module
path, the payload that crosses a stage, and the guards that keep passes apart."""

from __future__ import annotations

from .._exports import lazy_exports

#: Each public name and the module that defines it.
_EXPORTS = {
    "stage": "markers", "probe": "markers", "StageCall": "markers", "active_session": "markers",
    "is_profiling": "markers", "is_counting": "markers",
    "Session": "session",
    "attach_stages": "attach", "resolve_module": "attach", "hookable_modules": "attach",
    "TensorLeaf": "payload", "PayloadGroup": "payload", "PayloadNode": "payload",
    "walk_payload": "payload", "iter_leaves": "payload", "iter_tensors": "payload",
    "payload_bytes": "payload", "format_shape": "payload", "device_type_of": "payload",
    "FreshInputs": "guards", "fresh_copy": "guards", "check_mode": "guards", "check_inputs": "guards",
    "ModelState": "model_state",
    "check_collectors_argument": "guards", "call_model": "guards",
    "element_bytes": "byte_view", "int8_view": "byte_view",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
