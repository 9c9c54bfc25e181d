"""What the runtime tests share: the markers of the tests that need a runtime, and a small
model built seeded with its seeded input (so that two tests of one model see the same one)."""

from __future__ import annotations

from typing import Callable

import pytest
import torch
from torch import nn

#: Skipped without the ``runtimes`` extra (conftest.py): one marker, named for what a test runs.
needs_onnxruntime = pytest.mark.runtimes
needs_openvino = pytest.mark.runtimes


def seeded(build: Callable[[], nn.Module], *shape: int) -> tuple[nn.Module, torch.Tensor]:
    """``build()`` in eval mode and a standard-normal input of ``shape``, both drawn after
    ``torch.manual_seed(0)``."""
    torch.manual_seed(0)
    return build().eval(), torch.randn(*shape)
