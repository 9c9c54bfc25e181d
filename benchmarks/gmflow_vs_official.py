"""The zoo's GMFlow against the official code (haofeixu/gmflow), same weights, same inputs.

The official model is imported from a local checkout (``--official PATH``; nothing is fetched
or copied). Ours loads the official ``state_dict`` with ``strict=True``. The two forwards
alternate in paired rounds (official, ours, then ours, official, ...), so both see the same
machine state; each round gives one ratio ours / official, and the medians of the times and of
those per-round ratios are printed per size, with the speed-up (official / ours) and the
largest flow difference in pixels.

    python benchmarks/gmflow_vs_official.py --official /tmp/gmflow_official
    python benchmarks/gmflow_vs_official.py --official /tmp/gmflow_official \\
        --sizes 384x768 --rounds 10 --threads 2
    python benchmarks/gmflow_vs_official.py --official /tmp/gmflow_official --device cuda \\
        --sizes 448x1024 --rounds 20

Target: on the CPU at 384x768 with 2 threads, ours at least 1.25x faster (ratio
ours / official at most 0.8); on a GPU at 448x1024, at least 1.5x.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import zoo  # noqa: E402
from profiling import profile_model, stage  # noqa: E402
from zoo.tools.cli import ArgumentParser, run_tool  # noqa: E402
from zoo.options import ConfigError  # noqa: E402

#: How to get the checkout the benchmark compares against.
HOW_TO_GET_OFFICIAL = """\
No --official checkout given; nothing compared. To compare, get the official code once:
    git clone https://github.com/haofeixu/gmflow /tmp/gmflow_official
    git -C /tmp/gmflow_official checkout b5123431
then run:
    python benchmarks/gmflow_vs_official.py --official /tmp/gmflow_official"""

#: The official forward options of the 1-scale GMFlow (its README's evaluation settings).
FORWARD_OPTIONS = dict(attn_splits_list=[2], corr_radius_list=[-1], prop_radius_list=[-1])


#: The official modules attached as our stages (``--stages``), by our stage names. The official
#: ``backbone.conv1`` is the convolution alone; our ``conv1`` stage also holds its norm and ReLU.
OFFICIAL_MODULE_STAGES = {name: f"backbone.{name}" for name in
                          ("conv1", "layer1", "layer2", "layer3", "conv2")}
OFFICIAL_MODULE_STAGES.update(backbone="backbone", transformer="transformer",
                              feature_flow_attn="feature_flow_attn")
#: The official functions (attributes of ``gmflow.gmflow``) that run as our stages.
OFFICIAL_FUNCTION_STAGES = {"normalize": "normalize_img",
                            "position_encoding": "feature_add_position",
                            "global_correlation_softmax": "global_correlation_softmax"}


def parse_size(text: str) -> tuple[int, int]:
    """``"384x768"`` -> ``(384, 768)``; anything else is refused (one line, exit 2)."""
    parts = text.lower().split("x")
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not accepted; accepted: HxW with "
                                         f"positive integers, e.g. 384x768")
    return int(parts[0]), int(parts[1])


def official_model(path: Path) -> Any:
    """The official ``GMFlow`` (1 scale, as its released checkpoints), imported from
    ``path``."""
    if not (path / "gmflow" / "gmflow.py").is_file():
        raise ConfigError(f"--official {path} is not a checkout of haofeixu/gmflow (no "
                          f"gmflow/gmflow.py in it); accepted: the repository's root folder")
    sys.path.insert(0, str(path.resolve()))
    try:
        from gmflow.gmflow import GMFlow as OfficialGMFlow
    finally:
        # its meshgrid calls warn on every forward under torch >= 1.10
        warnings.filterwarnings("ignore", message="torch.meshgrid")
        sys.path.remove(str(path.resolve()))
    return OfficialGMFlow(feature_channels=128, num_scales=1, upsample_factor=8, num_head=1,
                          attention_type="swin", ffn_dim_expansion=4, num_transformer_layers=6)


def build_models(path: Path, device: str) -> tuple[Any, Any]:
    """``(official, ours)`` in eval mode on ``device``, ours with the official weights."""

    torch.manual_seed(0)
    official = official_model(path).eval().to(device)
    ours = zoo.create_model("gmflow").eval().to(device)
    ours.load_state_dict(official.state_dict(), strict=True)
    return official, ours


def timed_ms(forward: Callable[[], Any], device: str) -> float:
    """One call of ``forward``, in milliseconds (CUDA events on a GPU)."""

    if device == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        forward()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end)
    started = time.perf_counter()
    forward()
    return (time.perf_counter() - started) * 1e3


def paired_rounds(forwards: dict[str, Callable[[], Any]], rounds: int, device: str
                  ) -> dict[str, list[float]]:
    """Times of ``rounds`` calls of each forward, alternating A, B, then B, A, ..."""
    names = list(forwards)
    times: dict[str, list[float]] = {name: [] for name in names}
    for index in range(rounds):
        for name in names if index % 2 == 0 else names[::-1]:
            times[name].append(timed_ms(forwards[name], device))
    return times


def compare_size(official: Any, ours: Any, size: tuple[int, int], rounds: int, warmup: int,
                 device: str) -> dict[str, float]:
    """Time both models at ``size``; the medians, the median per-round ratio and the largest
    flow difference."""

    inputs = ours.example_inputs(1, ours.check_input_size(size), device=device)
    forwards = {"official": lambda: official(*inputs, **FORWARD_OPTIONS)["flow_preds"][-1],
                "ours": lambda: ours(*inputs)["flow_preds"][-1]}
    with torch.inference_mode():
        flows = {name: forward() for name, forward in forwards.items()}
        for _ in range(warmup):
            for forward in forwards.values():
                forward()
        times = paired_rounds(forwards, rounds, device)
    ratios = [a / b for a, b in zip(times["ours"], times["official"])]
    return {"official_ms": statistics.median(times["official"]),
            "ours_ms": statistics.median(times["ours"]),
            "ratio": statistics.median(ratios),
            "ratio_p10": _quantile(ratios, 0.1), "ratio_p90": _quantile(ratios, 0.9),
            "max_flow_diff": float((flows["ours"] - flows["official"]).abs().max())}


def _staged(name: str, function: Callable) -> Callable:
    """``function`` run as the stage ``name``."""
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with stage(name, *args) as s:
            return s.output(function(*args, **kwargs))
    return wrapper


@contextlib.contextmanager
def official_stages(official: Any) -> Iterator[dict[str, str]]:
    """Inside the block, the official functions of :data:`OFFICIAL_FUNCTION_STAGES` and its
    ``upsample_flow`` run as stages; yields the ``attach`` map of its modules (transformer
    layers included). Everything is put back on the way out."""
    module = sys.modules[type(official).__module__]
    saved = {attribute: getattr(module, attribute)
             for attribute in OFFICIAL_FUNCTION_STAGES.values()}
    attach = {name: f"model.{path}" for name, path in OFFICIAL_MODULE_STAGES.items()}
    for i in range(len(official.transformer.layers)):
        for part in ("self_attn", "cross_attn_ffn"):
            attach[f"{part}[{i}]"] = f"model.transformer.layers.{i}.{part}"
    try:
        for name, attribute in OFFICIAL_FUNCTION_STAGES.items():
            setattr(module, attribute, _staged(name, saved[attribute]))
        official.upsample_flow = _staged("upsampler", type(official).upsample_flow.__get__(
            official))
        yield attach
    finally:
        for attribute, function in saved.items():
            setattr(module, attribute, function)
        del official.upsample_flow


class _WithOptions(torch.nn.Module):
    """The official model called with :data:`FORWARD_OPTIONS`, as ``model`` (so the attached
    paths start with ``model.``)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, img0: torch.Tensor, img1: torch.Tensor) -> dict:
        return self.model(img0, img1, **FORWARD_OPTIONS)


def stage_times(official: Any, ours: Any, size: tuple[int, int], rounds: int, warmup: int
                ) -> dict[str, dict[str, float]]:
    """Per stage (calls summed), the median time in ms of each model over ``rounds`` paired
    rounds of :func:`profiling.profile_model`, and the whole forward's (``forward``), with
    the device's timer (CUDA events on a GPU)."""
    device = next(ours.parameters()).device
    timer = "cuda_time" if device.type == "cuda" else "cpu_time"
    inputs = ours.example_inputs(1, ours.check_input_size(size), device=device)
    wrapped = _WithOptions(official).eval()
    samples: dict[str, dict[str, list[float]]] = {"official": {}, "ours": {}}
    with official_stages(official) as attach:
        runs = {"official": lambda n: profile_model(wrapped, inputs, collectors=[timer],
                                                    warmup=0, repeats=n, attach=attach),
                "ours": lambda n: profile_model(ours, inputs, collectors=[timer],
                                                warmup=0, repeats=n)}
        for name in runs:
            runs[name](max(warmup, 1))
        for index in range(rounds):
            for name in list(runs) if index % 2 == 0 else list(runs)[::-1]:
                result = runs[name](1)
                per_stage = result.stages.assign(
                    stage=result.stages["stage"].str.replace(r"\[\d+\]$", "", regex=True)
                ).groupby("stage")[f"{timer}_ms_median"].sum()
                for stage_name, ms in per_stage.items():
                    samples[name].setdefault(stage_name, []).append(float(ms))
                samples[name].setdefault("forward", []).append(result.forward_ms[0])
    return {name: {stage_name: statistics.median(values) for stage_name, values in
                   per_model.items()} for name, per_model in samples.items()}


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def run(args: Any) -> None:
    """Build both models and print one table row per size."""

    if args.official is None:
        print(HOW_TO_GET_OFFICIAL)
        return
    if args.device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda is not accepted here: no CUDA device; accepted: cpu")
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    official, ours = build_models(Path(args.official), args.device)
    machine = (torch.cuda.get_device_name() if args.device == "cuda"
               else f"CPU, {torch.get_num_threads()} threads")
    print(f"GMFlow, ours (zoo, attention_impl={ours.attention_impl}) against the official code "
          f"({args.official}); {machine}; torch {torch.__version__}; {args.rounds} paired "
          f"rounds after {args.warmup} warm-up")
    if args.stages:
        print_stage_table(official, ours, args.sizes[-1], args.rounds, args.warmup)
        return
    print("| size | official (ms) | ours (ms) | ours / official [p10, p90] | speed-up "
          "| max flow diff (px) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for size in args.sizes:
        row = compare_size(official, ours, size, args.rounds, args.warmup, args.device)
        print(f"| {size[0]}x{size[1]} | {row['official_ms']:.0f} | {row['ours_ms']:.0f} | "
              f"{row['ratio']:.3f} [{row['ratio_p10']:.3f}, {row['ratio_p90']:.3f}] | "
              f"{1 / row['ratio']:.2f}x | {row['max_flow_diff']:.2e} |", flush=True)


def print_stage_table(official: Any, ours: Any, size: tuple[int, int], rounds: int,
                      warmup: int) -> None:
    """The per-stage table of :func:`stage_times` (stages in our forward's order)."""
    times = stage_times(official, ours, size, rounds, warmup)
    print(f"per stage at {size[0]}x{size[1]} (ms, median of {rounds} paired rounds; a stage's "
          f"calls summed)")
    print("| stage | official (ms) | ours (ms) | ours / official |")
    print("| --- | --- | --- | --- |")
    for name in ("forward", *ours.stage_names):
        theirs, mine = times["official"].get(name), times["ours"].get(name)
        if theirs is None:  # probes (feature0, feature1) take no time
            continue
        cells = [f"{t:.1f}" if t is not None else "-" for t in (theirs, mine)]
        ratio = f"{mine / theirs:.2f}" if theirs and mine is not None else "-"
        print(f"| {name} | {cells[0]} | {cells[1]} | {ratio} |", flush=True)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not accepted; accepted: an integer >= 1")
    return int(text)


def _count(text: str) -> int:
    return 0 if text == "0" else _positive(text)


def parser() -> ArgumentParser:
    """The command line (errors are one line, exit 2)."""
    p = ArgumentParser(prog="gmflow_vs_official.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--official", metavar="PATH",
                   help="a local checkout of haofeixu/gmflow (without it: how to get one)")
    p.add_argument("--sizes", nargs="+", type=parse_size, default=[(384, 512), (384, 768)],
                   metavar="HxW", help="input sizes (default: 384x512 384x768)")
    p.add_argument("--rounds", type=_positive, default=10, help="paired rounds (default 10)")
    p.add_argument("--warmup", type=_count, default=1, help="untimed rounds first (default 1)")
    p.add_argument("--threads", type=_positive, help="CPU threads (default: torch's)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--stages", action="store_true",
                   help="per-stage times of both (the last size) instead of the forwards")
    return p


def main(argv: Sequence[str] | None = None) -> None:
    """Parse ``argv`` and run under the project's error contract."""
    run_tool("gmflow_vs_official", lambda: run(parser().parse_args(argv)))


if __name__ == "__main__":
    main()
