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

Two ways to put it back, so that the timed forwards on a GPU synchronise once each:

* :meth:`ModelState.restore` checks everything: it compares every buffer with its saved value
  (one read-back per device, which on a GPU waits for the device) and every generator with
  its saved state, puts back what differs, and remembers it. It runs after the untimed passes,
  after the first forward of the timed loop and once at the end.
* :meth:`ModelState.restore_known_changes` runs between timed forwards. It reads nothing from
  the device and touches no generator that no forward was seen to draw from: it puts back the
  buffers that an earlier forward changed (no device work at all for a model in evaluation
  mode whose forward leaves its buffers alone, the usual case) and the generators that an
  earlier forward advanced (on the host: a CUDA generator's state is a seed and an offset).
"""

from __future__ import annotations

from typing import Any, Optional

import torch

__all__ = ["ModelState"]

#: Integer types by element size, to compare floating-point values bit for bit (a NaN buffer
#: that nothing changed is then unchanged).
_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _version(tensor: torch.Tensor) -> Optional[int]:
    """The tensor's version counter, or ``None`` for an inference tensor (which has none)."""
    return None if tensor.is_inference() else tensor._version


def _differs(buffer: torch.Tensor, saved: torch.Tensor) -> torch.Tensor:
    """A boolean scalar on the buffer's device: whether any bit of ``buffer`` differs from
    ``saved`` (true for a buffer that cannot be compared so, which is then always copied)."""
    if (buffer.layout != torch.strided or buffer.is_quantized or buffer.shape != saved.shape
            or buffer.dtype != saved.dtype):
        return torch.ones((), dtype=torch.bool, device=buffer.device)
    if (buffer.is_floating_point() or buffer.is_complex()) and buffer.element_size() in _BITS:
        integer = _BITS[buffer.element_size()]
        buffer, saved = buffer.view(integer), saved.view(integer)
    return torch.ne(buffer, saved).any()


def _differing(pairs: list[tuple[torch.Tensor, torch.Tensor]]
               ) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The ``(buffer, saved)`` pairs whose values differ, with one read-back per device."""
    by_device: dict[torch.device, list[tuple[torch.Tensor, torch.Tensor]]] = {}
    for pair in pairs:
        by_device.setdefault(pair[0].device, []).append(pair)
    changed = []
    for group in by_device.values():
        flags = torch.stack([_differs(buffer, saved) for buffer, saved in group]).tolist()
        changed += [pair for pair, flag in zip(group, flags) if flag]
    return changed


def _states_differ(now: list[torch.Tensor], saved: list[torch.Tensor]) -> bool:
    return any(not torch.equal(a, b) for a, b in zip(now, saved))


class ModelState:
    """The buffers and random generator states of ``model`` as they are now.

    Args:
        model: any module (or callable, whose buffers are not kept).
        device_type: where the forward runs; ``"cuda"`` keeps the CUDA generators too, and on
            ``"meta"`` buffers have no values to keep.
    """

    def __init__(self, model: Any, device_type: str) -> None:
        modules = list(model.modules()) if isinstance(model, torch.nn.Module) else []
        registered = [(module, dict(module._buffers)) for module in modules]
        distinct = {id(b): b for _, buffers in registered for b in buffers.values()
                    if b is not None and b.device.type != "meta"}
        # a TorchScript module's buffers are kept by value only: its slots cannot be reassigned
        self._registered = [(module, buffers) for module, buffers in registered
                            if not isinstance(module, torch.jit.ScriptModule)]
        with torch.inference_mode(False), torch.no_grad():
            self._values = [(b, b.detach().clone()) for b in distinct.values()]
        self._parameters = [(p, _version(p)) for p in (
            model.parameters() if isinstance(model, torch.nn.Module) else ())]
        self._cpu_random = torch.get_rng_state()
        self._cuda_random = (torch.cuda.get_rng_state_all()
                             if device_type == "cuda" and torch.cuda.is_initialized() else None)
        #: what the forwards so far were seen to change: buffers (by id), generators
        self._changing: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self._draws_cpu = self._draws_cuda = False
        self._checked = False

    def _put_back_registrations(self) -> None:
        """Each module's buffer tensors as they were (Python only: no device work)."""
        for module, buffers in self._registered:
            current = module._buffers
            if current.keys() != buffers.keys() or any(
                    current[name] is not tensor for name, tensor in buffers.items()):
                current.clear()
                current.update(buffers)

    def _copy_back(self, pairs: Any) -> None:
        # every changed value, whatever the version counters say: kernels such as
        # BatchNorm's update their running statistics without bumping them
        with torch.inference_mode(), torch.no_grad():
            for buffer, saved in pairs:
                buffer.copy_(saved)

    def restore(self) -> bool:
        """Put the buffers and random generators back as they were, after comparing each with
        its saved value (a read-back from the device), and remember what had changed for
        :meth:`restore_known_changes`; return whether device work was queued to do it (a
        buffer copied back)."""
        self._put_back_registrations()
        with torch.inference_mode(), torch.no_grad():
            changed = _differing(self._values) if self._values else []
        self._copy_back(changed)
        self._changing.update((id(pair[0]), pair) for pair in changed)
        if not torch.equal(torch.get_rng_state(), self._cpu_random):
            self._draws_cpu = True
            torch.set_rng_state(self._cpu_random)
        if self._cuda_random is not None and _states_differ(torch.cuda.get_rng_state_all(),
                                                            self._cuda_random):
            self._draws_cuda = True
            torch.cuda.set_rng_state_all(self._cuda_random)
        self._checked = True
        return bool(changed)

    def restore_known_changes(self) -> bool:
        """Put back what the forwards checked so far (:meth:`restore`) changed, reading
        nothing from the device: the buffers they changed, the generators they drew from, and
        every buffer registration (on the host); return whether device work was queued (a
        buffer copied back). Before any :meth:`restore`, it is one."""
        if not self._checked:
            return self.restore()
        self._put_back_registrations()
        self._copy_back(self._changing.values())
        if self._draws_cpu:
            torch.set_rng_state(self._cpu_random)
        if self._draws_cuda:
            torch.cuda.set_rng_state_all(self._cuda_random)
        return bool(self._changing)

    @property
    def changed_parameters(self) -> bool:
        """Whether the forwards so far changed a parameter in place (not restored)."""
        return any(version is not None and parameter._version != version
                   for parameter, version in self._parameters)
