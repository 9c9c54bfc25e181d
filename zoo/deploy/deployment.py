"""The network as deployed: ``run.dtype``, ``run.autocast``, ``run.channels_last``,
``run.compile`` and ``run.compile_mode``.

:class:`Deployment` holds these options, checked strictly. :meth:`Deployment.apply` casts the
model and its inputs (weights and floating inputs to ``run.dtype``; the model and every 4-D
input to ``torch.channels_last``), so every byte figure of the run (payload, tensor memory,
``bytes_read``/``bytes_written``, the torchstat table's memory columns) follows the real
tensors, while MACs and FLOPs, which count operations, stay the same. A model computes the
parts that must stay float32 on float32 copies and names them in
:meth:`~zoo.models.ZooModel.float32_parts`. :meth:`Deployment.running` is the context of the
forwards (``torch.autocast`` with ``run.autocast``), and :meth:`Deployment.timed_model` the
compiled callable of the warm-up and timed forwards (:mod:`profiling.runner.compiled`).
"""

from __future__ import annotations

import re
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterator, Mapping, Optional

import torch
from torch.utils._pytree import tree_map

from profiling.runner import compile_model, compile_report, cxx_compiler

from ..options import SCHEMA, ConfigError, check_value

__all__ = ["Deployment", "DTYPES", "TF32_NOTE", "half_emulated_note", "cpu_has_native",
           "roofline_dtype", "uses_tf32"]

#: ``run.dtype`` names and their torch types.
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}

_MISSING_KERNEL = re.compile(r'"([\w.:]+)" not implemented for \'(Half|BFloat16)\'')


@dataclass(frozen=True)
class Deployment:
    """How the profiled network is deployed (the ``run.*`` options of the same names)."""

    dtype: str = "float32"
    autocast: bool = False
    channels_last: bool = False
    compile: bool = False
    compile_mode: str = "default"
    runtime: str = "torch"

    @classmethod
    def from_config(cls, run: Mapping[str, Any]) -> "Deployment":
        """The options of a ``run`` config node (absent keys take their defaults), each
        checked against the app's schema; a one-line :class:`ConfigError` for a bad value."""
        values = {key: run.get(key, default) for key, default in asdict(cls()).items()}
        for key, value in values.items():
            check_value(f"run.{key}", value, SCHEMA[f"run.{key}"])
        return cls(**values)

    @property
    def torch_dtype(self) -> torch.dtype:
        """``run.dtype`` as a torch type (float32 for int8: the runtime quantises)."""
        return DTYPES.get(self.dtype, torch.float32)

    @property
    def is_default(self) -> bool:
        """Whether nothing differs from a float32 eager run."""
        return self == Deployment(compile_mode=self.compile_mode)

    def check(self, device: torch.device, *, timed: bool = True, warmup: int = 1) -> None:
        """Refuse the combinations that cannot work, with one line naming the reason.

        Args:
            device: where the run computes.
            timed: whether the run has timed forwards (compilation serves only those).
            warmup: the run's warm-up forwards (compilation needs one).
        """
        if self.runtime != "torch" or self.dtype == "int8":
            from .in_runtime import check_runtime

            check_runtime(self, device)
            return
        if self.autocast and self.dtype == "float32":
            raise ConfigError("run.autocast=true needs run.dtype=bfloat16 or float16, the type "
                              "autocast computes in; run.dtype=float32 leaves nothing to cast")
        if device.type == "meta" and (self.autocast or self.compile):
            option = "run.compile" if self.compile else "run.autocast"
            raise ConfigError(f"{option}=true needs real computation and device=meta has none; "
                              f"use device=cpu or device=cuda")
        if not self.compile:
            return
        if not timed:
            raise ConfigError("run.compile=true compiles the timed forwards, and this run has "
                              "no timer among its collectors (add cpu_time or cuda_time)")
        if warmup < 1:
            raise ConfigError("run.compile=true needs run.warmup >= 1: the first forward "
                              "compiles, and it must not be timed")
        if device.type == "cpu" and cxx_compiler() is None:
            raise ConfigError("run.compile=true on the CPU needs a C++ compiler for inductor "
                              "and none of g++, c++, clang++ is on PATH; install one (e.g. "
                              "apt-get install g++) or set run.compile=false")

    def apply(self, model: torch.nn.Module, inputs: Any) -> tuple[torch.nn.Module, Any]:
        """The model and inputs cast for this deployment (the model in place).

        Without autocast, floating weights, buffers and inputs take ``run.dtype``; with it they
        stay float32 and autocast casts per operator. ``channels_last`` puts the model and
        every 4-D input in ``torch.channels_last``.
        """
        cast = self.dtype in ("float16", "bfloat16") and not self.autocast and \
            self.runtime == "torch"  # a runtime takes the float32 model and runs it in dtype
        if cast:
            model = model.to(self.torch_dtype)
        if self.channels_last:
            model = model.to(memory_format=torch.channels_last)
        if cast or self.channels_last:
            inputs = tree_map(self._cast_input, inputs)
        return model, inputs

    def _cast_input(self, value: Any) -> Any:
        if not isinstance(value, torch.Tensor):
            return value
        if value.is_floating_point() and self.dtype in ("float16", "bfloat16") and \
                not self.autocast:
            value = value.to(self.torch_dtype)
        if self.channels_last and value.dim() == 4:
            value = value.contiguous(memory_format=torch.channels_last)
        return value

    def timed_model(self, model: torch.nn.Module) -> Optional[Callable]:
        """The compiled model for the warm-up and timed forwards, or ``None`` (eager)."""
        return compile_model(model, self.compile_mode) if self.compile else None

    @contextmanager
    def running(self, device: torch.device, model_name: str) -> Iterator[None]:
        """The context of every forward: ``torch.autocast`` with ``run.autocast``. A kernel
        missing for the half type on this device becomes a one-line :class:`ConfigError`."""
        autocast = (torch.autocast(device.type, dtype=self.torch_dtype) if self.autocast
                    else nullcontext())
        try:
            with autocast:
                yield
        except (RuntimeError, NotImplementedError) as error:
            missing = _MISSING_KERNEL.search(str(error))
            if missing is None or self.dtype == "float32":
                raise
            raise ConfigError(f"{model_name} cannot run in {self.dtype} on {device.type}: "
                              f"torch has no {missing.group(2)} kernel of {missing.group(1)} "
                              f"there; use run.dtype=float32 or another device") from None

    def byte_view(self, device: torch.device, model: torch.nn.Module):
        """The analytical int8 view on ``device=meta`` with ``run.dtype=int8`` (floating
        tensors at one byte per element, biases int32: :func:`profiling.stages.int8_view`);
        otherwise nothing changes."""
        if device.type == "meta" and self.dtype == "int8":
            from profiling.stages import int8_view

            return int8_view(model)
        return nullcontext()

    def warnings(self, device: torch.device) -> list[str]:
        """What the user should know before the run: ``bfloat16`` or ``float16`` on a CPU
        without native instructions for it is emulated, slower than float32 there."""
        if self.dtype in NATIVE_HALF_FLAGS and device.type == "cpu" and \
                cpu_has_native(self.dtype) is False:
            return [half_emulated_note(self.dtype)]
        return []

    def notes(self, model: torch.nn.Module, device: Optional[torch.device] = None
              ) -> list[str]:
        """What the run's notes say about the deployment (nothing for a float32 eager run)."""
        if self.is_default:
            return []
        notes = [f"as deployed: {self.describe()}",
                 *(self.warnings(device) if device is not None else [])]
        parts = model.float32_parts() if hasattr(model, "float32_parts") else {}
        if self.dtype in ("float16", "bfloat16") and parts:
            notes.append("kept in float32: " + "; ".join(f"{stage}: {what}"
                                                          for stage, what in parts.items()))
        if self.compile:
            report = compile_report()
            notes.append(f"compiled (torch.compile, mode={self.compile_mode}) in the warm-up: "
                         f"{report.graphs} graphs, {report.graph_breaks} graph breaks "
                         f"(stage boundaries break graphs)")
        return notes

    def describe(self) -> str:
        """One phrase: ``bfloat16 weights and inputs, channels-last, compiled``."""
        if self.autocast:
            words = [f"float32 weights under torch.autocast({self.dtype})"]
        elif self.dtype == "int8" and self.runtime == "torch":
            words = ["int8 weights and activations, analytical (one byte per element, biases "
                     "int32; nothing runs)"]
        elif self.dtype == "int8":
            words = ["int8 weights and activations (static post-training quantisation)"]
        elif self.runtime != "torch":
            words = [f"float32 model executed in {self.dtype}"]
        else:
            words = [f"{self.dtype} weights and inputs"]
        if self.channels_last:
            words.append("channels-last")
        if self.compile:
            words.append(f"compiled ({self.compile_mode})")
        if self.runtime != "torch":
            words.append(f"run by {self.runtime}")
        return ", ".join(words)

    def metadata(self, model: torch.nn.Module) -> dict[str, Any]:
        """The ``deployment`` entry of ``meta.json``: the options, the float32 parts (of a
        half-precision run) and the compiler's graph counts (of a compiled one)."""
        entry: dict[str, Any] = asdict(self)
        if self.dtype in ("float16", "bfloat16") and hasattr(model, "float32_parts"):
            entry["float32_parts"] = dict(model.float32_parts())
        if self.compile:
            entry.update(compile_report().as_dict())
        return entry


#: The CPU flags (``/proc/cpuinfo``) of native instructions for each half type: x86's AVX-512
#: and AMX extensions, Arm's bf16 and half-precision SIMD.
NATIVE_HALF_FLAGS = {"bfloat16": frozenset({"avx512_bf16", "amx_bf16", "bf16"}),
                     "float16": frozenset({"avx512_fp16", "amx_fp16", "asimdhp"})}


def half_emulated_note(dtype: str) -> str:
    """What a ``dtype`` run on a CPU without native instructions for it says before it
    starts: emulated, a half type runs many times slower than float32 (docs/deployed.md has a
    measurement), so its times say nothing of a CPU that has the instructions."""
    return (f"run.dtype={dtype}: this CPU has no native {dtype} instructions "
            f"({', '.join(sorted(NATIVE_HALF_FLAGS[dtype]))}), so {dtype} is emulated and will "
            f"be slower than float32 here; its times do not predict a CPU that has them")


def cpu_has_native(dtype: str) -> Optional[bool]:
    """Whether this CPU computes ``dtype`` (``bfloat16`` or ``float16``) natively, from
    ``/proc/cpuinfo``'s flags (:data:`NATIVE_HALF_FLAGS`); ``None`` where they cannot be
    read."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            flags = {word for line in cpuinfo
                     if line.lower().startswith(("flags", "features"))
                     for word in line.partition(":")[2].split()}
    except OSError:
        return None
    if not flags:
        return None
    return bool(flags & NATIVE_HALF_FLAGS[dtype])


#: What a CUDA run's notes say when float32 work runs on TF32 tensor cores.
TF32_NOTE = ("the roofline takes the TF32 peak: float32 convolutions (and matrix products, if "
             "so set) run on TF32 tensor cores here (torch.backends.cudnn.allow_tf32, "
             "torch.get_float32_matmul_precision()); roofline.dtype=float32 for the float32 peak")


def uses_tf32(device_type: str) -> bool:
    """Whether float32 work on ``device_type`` runs on TF32 tensor cores: CUDA with cuDNN's
    TF32 convolutions (PyTorch's default) or TF32 matrix products allowed."""
    return device_type == "cuda" and bool(
        torch.backends.cudnn.allow_tf32 or torch.get_float32_matmul_precision() != "highest")


def roofline_dtype(cfg: Mapping[str, Any], device_type: str = "cpu") -> str:
    """The data type whose peak the roofline takes: ``roofline.dtype``, or ``run.dtype`` when
    that is null (the default), read as ``tf32`` when float32 work runs on TF32 tensor cores
    (:func:`uses_tf32`: on CUDA, by PyTorch's default for convolutions)."""
    chosen = (cfg.get("roofline") or {}).get("dtype")
    if chosen is not None:
        return str(chosen)
    dtype = str((cfg.get("run") or {}).get("dtype", "float32"))
    return "tf32" if dtype == "float32" and uses_tf32(device_type) else dtype

