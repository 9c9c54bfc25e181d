"""What a forward may change besides its output, put back after every pass of a profile.

A profile runs the same forward several times. A model whose forward updates its buffers
(BatchNorm statistics in training mode, an exponential moving average, a call counter, a cache
registered on the first call) or draws random numbers (dropout, stochastic depth, sampled
noise) would otherwise see a different state in every pass, take other branches, and be left
changed by the profile. :class:`ModelState` takes the state before the first pass and puts it
back after each one, so that every pass is the plain forward that the caller would have run,
and the model and the random generators are as the caller left them when the profile ends.

Kept: every module's buffers (values, the tensor objects themselves when the forward assigns
new ones, and buffers registered or removed during the forward) and the default random
generators of the CPU and, for a CUDA model, of every CUDA device. Not kept: plain Python
attributes that a forward changes (``self.step += 1``); parameters changed in place are
reported (:attr:`ModelState.changed_parameters`), since a copy of every weight would double
the model's memory.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

__all__ = ["ModelState"]


def _version(tensor: torch.Tensor) -> Optional[int]:
    """The tensor's version counter, or ``None`` for an inference tensor (which has none)."""
    return None if tensor.is_inference() else tensor._version


class ModelState:
    """The buffers and random generator states of ``model`` as they are now.

    Args:
        model: any module (or callable, whose buffers are not kept).
        device_type: where the forward runs; ``"cuda"`` keeps the CUDA generators too, and on
            ``"meta"`` buffers have no values to keep.
    """

    def __init__(self, model: Any, device_type: str) -> None:
        modules = list(model.modules()) if isinstance(model, torch.nn.Module) else []
        self._registered = [(module, dict(module._buffers)) for module in modules]
        distinct = {id(b): b for _, buffers in self._registered for b in buffers.values()
                    if b is not None and b.device.type != "meta"}
        with torch.inference_mode(False), torch.no_grad():
            self._values = [(b, b.detach().clone()) for b in distinct.values()]
        self._parameters = [(p, _version(p)) for p in (
            model.parameters() if isinstance(model, torch.nn.Module) else ())]
        self._cpu_random = torch.get_rng_state()
        self._cuda_random = (torch.cuda.get_rng_state_all()
                             if device_type == "cuda" and torch.cuda.is_initialized() else None)

    def restore(self) -> bool:
        """Put the buffers and random generators back as they were; return whether device
        work was queued to do it (a buffer copied back)."""
        for module, buffers in self._registered:
            if not isinstance(module, torch.jit.ScriptModule) and (
                    module._buffers.keys() != buffers.keys() or any(
                        module._buffers[name] is not tensor for name, tensor in buffers.items())):
                module._buffers.clear()
                module._buffers.update(buffers)
        # every value, whatever the version counters say: kernels such as BatchNorm's update
        # their running statistics without bumping them
        with torch.inference_mode(), torch.no_grad():
            for buffer, saved in self._values:
                buffer.copy_(saved)
        torch.set_rng_state(self._cpu_random)
        if self._cuda_random is not None:
            torch.cuda.set_rng_state_all(self._cuda_random)
        return bool(self._values)

    @property
    def changed_parameters(self) -> bool:
        """Whether the forwards so far changed a parameter in place (not restored)."""
        return any(version is not None and parameter._version != version
                   for parameter, version in self._parameters)
