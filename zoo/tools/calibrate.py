"""Measure this machine's roofline ceilings: matmul FLOP/s and copy bandwidth.

``python -m zoo.calibrate [--device cuda] [--dtypes float32 bfloat16] [--output ceilings.yaml]``

The matmul rate is that of square ``n x n`` products (``2 n^3`` FLOPs each), the bandwidth that
of ``copy_`` between two large buffers (each byte read once and written once). Both run for a
fixed time after a warm-up and report the sustained rate, which is what a profiled stage can
hope for; vendor peaks (``profiling.counting.PRESETS``) are higher. The YAML file it writes is
read by ``profiling.counting.load_ceilings``.
"""

from __future__ import annotations

import os
import platform
import time
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from profiling.files import check_output_file

from .cli import ArgumentParser, run_tool
from .registry import register_tool
from ..options import (Choice, ConfigError, Integer, ListOf, Nullable, Number, as_checker,
                       check_value)

if TYPE_CHECKING:  # torch loads once the arguments are parsed: --help answers at once
    import torch

    from profiling.counting import Ceilings

__all__ = ["measure_matmul_flops", "measure_copy_bandwidth", "calibrate", "main"]


def _sustained_rate(step: Callable[[], None], work_per_step: float, seconds: float,
                    synchronize: Callable[[], None]) -> float:
    step()
    synchronize()
    steps, start = 0, time.perf_counter()
    while True:
        step()
        steps += 1
        if steps % 4 == 0 or seconds == 0:
            synchronize()
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                return steps * work_per_step / elapsed


def _synchronizer(device: torch.device) -> Callable[[], None]:
    import torch

    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def measure_matmul_flops(device: torch.device, dtype: torch.dtype, size: int,
                         seconds: float) -> float:
    """Sustained FLOP/s of ``size x size`` matrix products of ``dtype`` on ``device``."""
    import torch

    a = torch.randn(size, size, device=device).to(dtype)
    b = torch.randn(size, size, device=device).to(dtype)
    out = torch.empty(size, size, device=device, dtype=dtype)
    return _sustained_rate(lambda: torch.mm(a, b, out=out), 2.0 * size ** 3, seconds,
                           _synchronizer(device))


def measure_copy_bandwidth(device: torch.device, megabytes: int, seconds: float) -> float:
    """Sustained bytes/s of copying a ``megabytes`` MiB buffer (read plus write)."""
    import torch

    elements = megabytes * 2 ** 20 // 4
    source = torch.ones(elements, device=device)
    target = torch.empty_like(source)
    return _sustained_rate(lambda: target.copy_(source), 2.0 * elements * 4, seconds,
                           _synchronizer(device))


def calibrate(device: str = "cpu", dtypes: Sequence[str] = ("float32",),
              size: Optional[int] = None, megabytes: Optional[int] = None,
              seconds: float = 2.0) -> Ceilings:
    """Measure the ceilings of ``device`` for each of ``dtypes``.

    Raises:
        ConfigError: for a device that cannot be measured (meta, an absent GPU), a dtype that
            is not a floating-point type, or a size, buffer or time that is not positive and
            finite.
    """
    import torch

    from profiling.counting import Ceilings

    target = _measurable_device(device)
    check_value("--dtypes", list(dtypes), ListOf(Choice(_DTYPES)))
    check_value("--size", size, Nullable(Integer(minimum=1)))
    check_value("--megabytes", megabytes, Nullable(Integer(minimum=1)))
    check_value("--seconds", seconds, _SECONDS)
    on_gpu = target.type == "cuda"
    size = size or (8192 if on_gpu else 1024)
    megabytes = megabytes or (1024 if on_gpu else 64)
    _check_memory(target, size, megabytes, dtypes)
    peaks = {name: measure_matmul_flops(target, getattr(torch, name), size, seconds)
             for name in dtypes}
    bandwidth = measure_copy_bandwidth(target, megabytes, seconds)
    from profiling.reports import cpu_name  # here: --help stays free of torch

    device_name = torch.cuda.get_device_name(target) if on_gpu else cpu_name()
    return Ceilings(f"measured {device_name}".strip(), peaks, bandwidth,
                    f"python -m zoo.calibrate on {platform.node()} "
                    f"({time.strftime('%Y-%m-%d')}, torch {torch.__version__}, "
                    f"{torch.get_num_threads() if not on_gpu else 1} threads, "
                    f"matmul {size}x{size}, copy {megabytes} MiB)")


_DTYPES = ("float64", "float32", "bfloat16", "float16")
#: Up to an hour per measurement: a sustained rate, not a soak test.
_SECONDS = as_checker(lambda v: Number(above=0).ok(v) and v <= 3600,
                      "a finite number of seconds > 0 and <= 3600")


def _check_memory(device: torch.device, size: int, megabytes: int,
                  dtypes: Sequence[str]) -> None:
    """Refuse a ``--size`` or ``--megabytes`` whose buffers exceed the device's memory (three
    ``size x size`` matrices, two copy buffers), before allocating: bad input, not a failure."""
    import torch

    if device.type == "cuda":
        memory = torch.cuda.mem_get_info(device)[1]
    else:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    widest = max(getattr(torch, name).itemsize for name in dtypes)
    needs = {"--size": (3 * size * size * max(widest, 4), f"{size}"),
             "--megabytes": (2 * megabytes * 2 ** 20, f"{megabytes}")}
    for option, (needed, given) in needs.items():
        if needed > memory:
            raise ConfigError(f"{option}={given} needs {needed / 2 ** 30:,.1f} GiB, over the "
                              f"{memory / 2 ** 30:,.1f} GiB of {device.type} memory; give a "
                              f"smaller {option}")


def _measurable_device(device: str) -> torch.device:
    import torch

    try:
        target = torch.device(device)
    except (RuntimeError, TypeError):
        raise ConfigError(f"--device {device!r} is not a device; accepted: cpu, cuda, "
                          f"cuda:N") from None
    if target.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda was asked for, but this machine has no CUDA GPU; "
                          "use --device cpu")
    if target.type == "cuda" and (target.index or 0) >= torch.cuda.device_count():
        raise ConfigError(f"--device {device}: this machine has {torch.cuda.device_count()} "
                          f"CUDA device(s)")
    if target.type not in ("cpu", "cuda"):
        raise ConfigError(f"--device {device} cannot be measured (it computes nothing); "
                          f"accepted: cpu, cuda, cuda:N")
    return target



def _main(argv: Optional[Sequence[str]]) -> Ceilings:
    parser = ArgumentParser(prog="python -m zoo.calibrate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default=None,
                        help="cpu or cuda[:N] (default: cuda when available, else cpu)")
    parser.add_argument("--dtypes", nargs="+", default=["float32"],
                        help=f"matmul data types to measure ({', '.join(_DTYPES)})")
    parser.add_argument("--size", type=int, help="matmul size n (default 1024 CPU, 8192 CUDA)")
    parser.add_argument("--megabytes", type=int, help="copy buffer in MiB (default 64 / 1024)")
    parser.add_argument("--seconds", type=float, default=2.0,
                        help="time per measurement, > 0 and <= 3600 (default 2)")
    parser.add_argument("--output", help="write the ceilings to this YAML file")
    args = parser.parse_args(argv)
    if args.output:
        check_output_file(args.output, "--output")  # before measuring
    import torch

    from profiling.counting import save_ceilings

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    result = calibrate(device, args.dtypes, args.size, args.megabytes, args.seconds)
    print(f"{result.name}")
    for name, rate in result.peak_flops_per_s.items():
        print(f"  matmul {name}: {rate / 1e9:,.1f} GFLOP/s")
    print(f"  copy bandwidth: {result.memory_bandwidth_bytes_per_s / 1e9:,.1f} GB/s")
    print(f"  ridge point ({next(iter(result.peak_flops_per_s))}): "
          f"{result.ridge_point(next(iter(result.peak_flops_per_s))):.1f} FLOP/byte")
    if args.output:
        print(f"written to {save_ceilings(result, args.output)}")
    return result


@register_tool("calibrate", "measure this machine's roofline ceilings")
def main(argv: Optional[Sequence[str]] = None) -> Ceilings:
    """Command-line entry point; prints the ceilings and writes them when asked."""
    return run_tool("zoo.calibrate", lambda: _main(argv))

if __name__ == "__main__":
    main()
