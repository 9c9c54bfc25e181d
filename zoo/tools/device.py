"""The machine a run runs on: the ``device`` config node as a ``torch.device``, torch's
threads while the run lasts (``run.threads``), and the roofline's ceilings of the device."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional

import torch

from profiling.counting import Ceilings, ceilings_for_device, load_ceilings

from ..options import ConfigError

__all__ = ["resolve_device", "torch_threads", "device_ceilings", "ceilings_reference"]


def resolve_device(device_config: Any) -> torch.device:
    """The ``torch.device`` of a ``device`` config node, checked for availability."""
    name = str(device_config.name)
    if name == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError("device=cuda was asked for, but this machine has no CUDA GPU "
                              "(torch.cuda.is_available() is False); use device=cpu or "
                              "device=meta")
        index = int(device_config.get("index", 0))
        if index >= torch.cuda.device_count():
            raise ConfigError(f"device.index={index} does not exist; this machine has "
                              f"{torch.cuda.device_count()} CUDA device(s)")
        return torch.device("cuda", index)
    if name in ("cpu", "meta"):
        return torch.device(name)
    raise ConfigError(f"unknown device '{name}'; choose device=cpu, device=cuda or device=meta")


@contextmanager
def torch_threads(count: Optional[int]) -> Iterator[None]:
    """torch's intra-op threads set to ``count`` (``run.threads``) while the block runs, and
    restored after; ``None`` leaves torch's own choice."""
    if count is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def device_ceilings(roofline: Any, device: torch.device) -> Optional[Ceilings]:
    """The ceilings of the roofline: the file or preset ``roofline.ceilings`` names, else those
    of a known CUDA GPU, else ``None``; a bad file fails here, before the profile."""
    chosen = (roofline or {}).get("ceilings")
    if chosen:
        return load_ceilings(str(chosen))
    if device.type == "cuda":
        return ceilings_for_device(torch.cuda.get_device_name(device))
    return None


def ceilings_reference(roofline: Any, ceilings: Ceilings) -> str:
    """What ``zoo.plot`` can load the ceilings from again: the YAML's absolute path, or the
    preset's name."""
    chosen = (roofline or {}).get("ceilings")
    if chosen and Path(str(chosen)).is_file():
        return str(Path(str(chosen)).resolve())
    return ceilings.name
