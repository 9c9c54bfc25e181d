"""The executor registry: ``@register_executor`` on a class makes an inference runtime choosable.

An executor is one module with one :class:`Executor` subclass: its name, the packages it needs
(float32, and what int8 adds), the device types and dtypes it runs, its quantiser, ``open``
(a profiled or plain session of an exported ONNX model) and ``quantise``, what its sessions
change from the runtime's defaults when they take turns with others
(``interleaved_settings``), and how its native log is kept quiet (``quiet_native_log``). A
session (:class:`ExecutorSession`) runs feeds, gives the per-node times of each forward and
describes the deployment. Everything that names runtimes (``run.runtime``'s accepted values,
the dtypes each runs, the packages to install, the app's checks, the session settings that
``meta.json`` records) reads them from here, and no module outside an executor's own names a
runtime; ``tests/test_executor_contract.py`` runs every registered executor.
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
from pathlib import Path
from typing import Any, ClassVar, ContextManager, Mapping, Optional, Protocol, Sequence, TypeVar

from ..errors import ProfilingError

__all__ = ["Executor", "ExecutorSession", "register_executor", "registered_executors",
           "executor"]

_EXECUTORS: dict[str, type["Executor"]] = {}
#: How the modules of this package that hold an executor end (imported on first look-up, so
#: that a new runtime is one file: ``tensorrt_backend.py``).
_MODULE_SUFFIX = "_backend"


class ExecutorSession(Protocol):
    """What :meth:`Executor.open` gives: one model compiled in one runtime."""

    def run(self, feeds: Sequence[Any]) -> list[Any]:
        """One inference of the feeds (numpy arrays, the graph's input order): its outputs."""

    def record(self) -> None:
        """Read what the profiler keeps between runs (called after each, outside its clock)."""

    def node_times(self, skip_runs: int) -> list[dict[str, float]]:
        """Per-node times (ms) of each profiled run after the first ``skip_runs``."""

    def run_spans(self, skip_runs: int) -> Optional[list[float]]:
        """How long (ms) the runtime spent inside each profiled run after the first
        ``skip_runs``, by its own clock (``None``: it does not say)."""

    def rounding_bound_ms(self) -> float:
        """How far one run's node times, added up, can be off by the profiler's rounding."""

    def node_precisions(self) -> dict[str, str]:
        """Each node -> the precision it executed in (``float32``, ``int8``, ...)."""

    def main_nodes(self) -> set[str]:
        """The nodes that run a convolution or matrix product."""

    def constituents(self) -> dict[str, list[str]]:
        """Each fused node -> the exported nodes it was made of (``{}``: not known)."""

    def aliases(self) -> dict[str, list[str]]:
        """Each node -> other names it goes by (values, original layers)."""

    def neighbours(self) -> dict[str, list[str]]:
        """Each node -> the nodes after it, then the nodes before it."""

    def describe(self) -> dict[str, Any]:
        """The deployment facts for ``meta.json``: ``runtime``, ``version``,
        ``execution_provider`` and ``inference_precision`` (what the floats executed in)."""


class Executor:
    """An inference runtime that runs an exported ONNX model (subclass and register it)."""

    #: ``run.runtime=NAME``.
    name: ClassVar[str] = ""
    #: The packages a float run needs, and what an int8 run needs on top.
    packages: ClassVar[tuple[str, ...]] = ()
    int8_packages: ClassVar[tuple[str, ...]] = ()
    #: The device types (``cpu``, ``cuda``) and the dtypes (``run.dtype``) it runs.
    devices: ClassVar[tuple[str, ...]] = ("cpu",)
    dtypes: ClassVar[tuple[str, ...]] = ("float32",)
    #: The quantiser of its int8 runs, as a failure names it (``""``: no int8).
    quantiser: ClassVar[str] = ""
    #: What a session opened with ``interleaved=True`` changes from the runtime's defaults,
    #: setting -> value: such sessions take turns with other sessions (or PyTorch) on the
    #: same cores (the paired speed figures, ``zoo.compare --run``), and ``meta.json``
    #: records these beside their times (``{}``: it runs as its defaults say).
    interleaved_settings: ClassVar[Mapping[str, str]] = {}
    #: The suffixes (regular expressions) that the runtime and its quantiser append to exported
    #: node names in the names of the nodes it runs (``relu_nchwc``): stripped, they lead back
    #: to the exported node (:class:`~.stage_map.StageMap`).
    node_name_suffixes: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def quiet_native_log(cls) -> ContextManager[None]:
        """A context in which the runtime's own log, which its native code writes to the
        terminal past Python's streams and loggers, prints fatal errors only, back at its
        default afterwards (:func:`~.quiet.quiet` enters it); nothing to do by default."""
        return contextlib.nullcontext()

    def needed(self, dtype: str) -> tuple[str, ...]:
        """The packages a run of ``dtype`` needs."""
        return self.packages + (self.int8_packages if dtype == "int8" else ())

    def check_device(self, device_type: str) -> None:
        """Raise a one-line :class:`~profiling.ProfilingError` unless it can run on
        ``device_type`` here (an executor whose device needs a package build overrides it)."""
        if device_type not in self.devices:
            raise ProfilingError(f"runtime {self.name} runs on {' or '.join(self.devices)}, "
                                 f"not {device_type}")

    def open(self, model_file: Path, workdir: Path, device_type: str, *, profile: bool = True,
             dtype: str = "float32", quantised: Any = None,
             interleaved: bool = False) -> ExecutorSession:
        """A session of the ONNX model at ``model_file`` (or the quantiser's ``quantised``
        model) on ``device_type``, its profiler on when ``profile``, its floating operators
        in ``dtype`` (``int8``: those left in float32); ``workdir`` takes what the profiler
        writes; ``interleaved``: it takes turns with other sessions on the same cores, with
        :attr:`interleaved_settings` applied (:meth:`session_settings`)."""
        raise NotImplementedError

    def session_settings(self, interleaved: bool) -> dict[str, str]:
        """The settings a session applies over the runtime's defaults: the
        :attr:`interleaved_settings` when it takes turns, else none."""
        return dict(self.interleaved_settings) if interleaved else {}

    def quantise(self, model_file: Path, input_names: Sequence[str], workdir: Path,
                 calibration: Sequence[Sequence[Any]]) -> tuple[Path, Any, set[str]]:
        """int8: the file to run (the quantised file in ``workdir``, or ``model_file``), the
        model object :meth:`open` takes instead of the file (else ``None``), and the names
        of the values the quantiser quantises."""
        raise NotImplementedError(f"{self.name} has no quantiser")


ExecutorType = TypeVar("ExecutorType", bound=type[Executor])


def register_executor(cls: ExecutorType) -> ExecutorType:
    """Register the executor class ``cls`` under ``cls.name``; an int8 executor names its
    quantiser, and no other class may hold its name."""
    if not (isinstance(cls, type) and issubclass(cls, Executor)) or not cls.name:
        raise TypeError(f"register_executor takes a named Executor subclass, got {cls!r}")
    if ("int8" in cls.dtypes) != bool(cls.quantiser):
        raise ValueError(f"{cls.__name__}: an executor that runs int8 names its quantiser, "
                         f"and only one that does")
    if not all(isinstance(key, str) and isinstance(value, str)
               for key, value in dict(cls.interleaved_settings).items()):
        raise TypeError(f"{cls.__name__}: interleaved_settings maps setting names to string "
                        f"values (as meta.json records them)")
    holder = _EXECUTORS.get(cls.name)
    if holder is not None and holder.__qualname__ != cls.__qualname__:
        raise ValueError(f"two executors named {cls.name!r}: {holder.__name__} and "
                         f"{cls.__name__}")
    _EXECUTORS[cls.name] = cls
    return cls


def registered_executors() -> dict[str, type[Executor]]:
    """Every registered executor class by name: those of this package's ``*_backend``
    modules first (by module name), then the others in the order they were registered."""
    found = sorted(module.name for module in pkgutil.iter_modules([str(Path(__file__).parent)])
                   if module.name.endswith(_MODULE_SUFFIX))
    order = [importlib.import_module(f".{name}", __package__).__name__ for name in found]

    def rank(name: str) -> int:
        module = _EXECUTORS[name].__module__
        return order.index(module) if module in order else len(order)

    return {name: _EXECUTORS[name] for name in sorted(_EXECUTORS, key=rank)}


def executor(name: str, dtype: Optional[str] = None) -> Executor:
    """The executor registered as ``name``; a one-line :class:`~profiling.ProfilingError`
    for an unknown name, or a ``dtype`` it does not run, saying what is accepted."""
    known = registered_executors()
    if name not in known:
        raise ProfilingError(f"unknown runtime '{name}'; accepted: {', '.join(known)}")
    chosen = known[name]()
    if dtype is not None and dtype not in chosen.dtypes:
        raise ProfilingError(f"dtype '{dtype}' is not run by {name}; accepted: "
                             f"{', '.join(chosen.dtypes)}")
    return chosen
