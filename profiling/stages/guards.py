"""What keeps the passes of one profile from seeing each other: inputs and training state.

A profile runs the same forward several times (analysis, counting, warm-up, repeats). A model
that changes its input in place would see a different input in every pass, one that returns its
input (or a view of it, or a list it fills) would hand later passes' changes to the output, and
a model in training mode would update its BatchNorm statistics once per pass.
:class:`FreshInputs` gives every pass its own copy of the caller's inputs (the caller's own
tensors are never handed to the model) and :func:`fresh_copy` keeps the returned output apart
from later passes; :func:`check_mode` refuses a training-mode model unless asked
(:class:`~profiling.stages.model_state.ModelState` puts buffers and random generators back
after every pass, in any mode).
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import torch

from ..errors import ProfilingError
from .payload import iter_tensors

__all__ = ["FreshInputs", "fresh_copy", "check_mode", "check_inputs", "check_collectors_argument",
           "call_model"]


def call_model(model: Callable, inputs: Union[Sequence[Any], Mapping[str, Any]]) -> Any:
    """``model(*inputs)``, or ``model(**inputs)`` for a mapping: how every pass calls the
    model with its inputs."""
    if isinstance(inputs, Mapping):
        return model(**inputs)
    return model(*inputs)


def check_inputs(inputs: Any) -> None:
    """Raise :class:`ProfilingError` unless ``inputs`` is the forward's positional arguments
    (a tuple or list) or its keyword arguments (a mapping with string keys): a bare tensor
    would be unpacked along its first dimension (a batch of one became one unbatched image),
    a string letter by letter."""
    if isinstance(inputs, Mapping):
        keys = [key for key in inputs if not isinstance(key, str)]
        if keys:
            raise ProfilingError(f"inputs as a mapping are keyword arguments, so its keys must be "
                                 f"strings, got {keys[0]!r}")
        return
    if isinstance(inputs, (list, tuple)):
        return
    what = (f"a tensor of shape {list(inputs.shape)}" if isinstance(inputs, torch.Tensor)
            else f"{type(inputs).__name__} {inputs!r}"[:120])
    raise ProfilingError(f"inputs must be the forward's arguments as a tuple or list, e.g. (x,), "
                         f"or its keyword arguments as a dict, got {what}; for one tensor x "
                         f"give (x,)")


def check_collectors_argument(collectors: Any) -> None:
    """Raise :class:`ProfilingError` unless ``collectors`` is a list or tuple (a string would
    otherwise be read letter by letter)."""
    if isinstance(collectors, (str, bytes)) or not isinstance(collectors, (list, tuple)):
        raise ProfilingError(f"collectors must be a list, e.g. ['payload', 'cpu_time'], got "
                             f"{collectors!r}")


def check_collector_devices(collectors: Sequence[Any], device_type: str) -> None:
    """Raise :class:`ProfilingError` for a collector that does not measure on ``device_type``
    (its ``devices``), such as a timer on the meta device, where nothing runs to be timed."""
    for collector in collectors:
        if device_type not in collector.devices:
            raise ProfilingError(
                f"collector '{collector.name}' does not measure on {device_type} (it measures on "
                f"{', '.join(collector.devices)}); leave it out of collectors")


def check_mode(model: Any, train: bool) -> None:
    """Raise :class:`ProfilingError` for a module in training mode unless ``train=True``."""
    if not isinstance(train, bool):
        raise ProfilingError(f"train must be True or False, got {train!r}")
    if train or not isinstance(model, torch.nn.Module):
        return
    training = next((name or type(model).__name__ for name, module in model.named_modules()
                     if module.training), None)
    if training is not None:
        raise ProfilingError(f"the model is in training mode ({training}): BatchNorm "
                             f"statistics and dropout would change with every pass; call "
                             f"model.eval(), or profile training-mode forwards with train=True")


def _copy_tensor(tensor: torch.Tensor, storages: dict) -> torch.Tensor:
    """A copy of ``tensor`` with its own storage, the same strides and offset, and the same
    storage as the other copies of views of one storage (``storages``: original -> copy). The
    copy is a normal tensor (not an inference tensor), so its version counter sees every
    in-place change."""
    if (type(tensor) not in (torch.Tensor, torch.nn.Parameter) or tensor.layout != torch.strided
            or tensor.is_quantized or tensor.is_conj() or tensor.is_neg()):
        return tensor.detach().clone()
    storage = tensor.untyped_storage()
    # a meta storage has no address to share: each meta tensor gets its own
    key = id(tensor) if tensor.device.type == "meta" else (tensor.device, storage.data_ptr())
    if key not in storages:
        storages[key] = storage.clone()
    return torch.empty(0, dtype=tensor.dtype, device=tensor.device).set_(
        storages[key], tensor.storage_offset(), tensor.size(), tensor.stride())


def _copy_tensors(tensors: Sequence[torch.Tensor]) -> dict[int, torch.Tensor]:
    """``{id(original): copy}`` for every distinct tensor of ``tensors``."""
    copies: dict[int, torch.Tensor] = {}
    storages: dict = {}
    with torch.inference_mode(False), torch.no_grad():
        for tensor in tensors:
            if id(tensor) not in copies:
                copies[id(tensor)] = _copy_tensor(tensor, storages)
    return copies


def _rebuild(value: Any, copies: dict[int, torch.Tensor]) -> Any:
    """``value`` with its containers copied and its tensors replaced by ``copies``: a deep copy
    whose memo already holds the tensors; lists, tuples and dicts alone where an object in it
    cannot be deep-copied (a lock, an open file), which the copy then shares."""
    try:
        return copy.deepcopy(value, dict(copies))
    except Exception:  # an object that refuses to be copied: copy what surely can be
        if isinstance(value, torch.Tensor):
            return copies.get(id(value), value)
        if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
            return type(value)(_rebuild(item, copies) for item in value)
        if type(value) is dict:
            return {key: _rebuild(item, copies) for key, item in value.items()}
        return value


def fresh_copy(value: Any) -> Any:
    """A copy of ``value`` (tensors, containers, objects) that shares nothing with it that a
    later in-place change could reach; views of one tensor stay views of one copy, with their
    strides. Tensors that are not strided (sparse, quantized) are cloned."""
    return _rebuild(value, _copy_tensors(list(iter_tensors(value))))


class FreshInputs:
    """Hands every pass a copy of the caller's inputs, as the caller gave them.

    The caller's tensors are never given to the model. Containers (lists, dicts, objects) are
    copied for every pass; tensors are copied once and reused while no pass changed them (seen
    through their version counters, which every in-place operation bumps), so a model that
    leaves its inputs alone costs one copy of them. A pass whose output is kept gets tensors
    that no later pass sees, so the output can return its input or a view of it.
    """

    def __init__(self, inputs: Any) -> None:
        self.inputs = inputs
        self.originals = list(iter_tensors(inputs))
        self.copies: Optional[dict[int, torch.Tensor]] = None
        self.versions: list[int] = []
        #: whether any pass changed its inputs in place
        self.mutated = False

    def next(self) -> tuple[Any, bool]:
        """The inputs for the next pass, and whether their tensors were copied for it (work
        on the inputs' device that a timer must not see)."""
        copied = self.copies is None
        if copied:
            self.copies = _copy_tensors(self.originals)
            self.versions = [t._version for t in self.copies.values()]
        return _rebuild(self.inputs, self.copies), copied

    def done(self, keep: bool = False) -> None:
        """After a pass: note whether it changed its inputs, and copy them anew for the next
        pass if it did or if its output is kept (``keep``)."""
        if self.copies is None:
            return
        changed = [t._version for t in self.copies.values()] != self.versions
        self.mutated |= changed
        if changed or keep:
            self.copies = None
