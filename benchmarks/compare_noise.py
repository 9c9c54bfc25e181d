"""How often ``zoo.compare`` calls a change significant between two runs of one configuration.

Each try profiles the same configuration twice, as two separate processes (as a user would:
``python -m zoo.profile ...`` twice), and compares them with
:func:`profiling.reports.compare_runs`. A stage marked significant there is a false
alarm. Target: at most 1 try in 10 with any false alarm. With ``--gmflow`` it also
checks the opposite: ``gmflow`` against ``gmflow model.num_transformer_layers=2`` at 128x192
must mark ``transformer`` significantly faster.

    python benchmarks/compare_noise.py --tries 10
    python benchmarks/compare_noise.py --tries 10 -- model=timm model.arch=resnet18
    python benchmarks/compare_noise.py --tries 0 --gmflow

Each run's noise (load average, forward CV) is printed beside its try. By default, as in
``zoo.compare``, nothing is called significant between runs whose machine was loaded above its
cores (the try says "withheld"); ``--loaded`` computes the significance anyway, to see how
often it would be wrong there.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence

import pandas as pd

from profiling.reports.comparison import FORWARD, MIN_CHANGE, compare_runs
from profiling.reports.comparison_text import noise_summary
from profiling.reports import read_run

#: The configuration compared with itself unless others are given after ``--``.
DEFAULT = ["model=torchvision", "model.arch=resnet18", "input.size=[128,128]",
           "run.warmup=2", "run.repeats=20"]
#: The two GMFlow configurations whose transformer must differ.
GMFLOW = (["model=gmflow", "input.size=[128,192]", "run.warmup=1", "run.repeats=10"],
          ["model=gmflow", "input.size=[128,192]", "run.warmup=1", "run.repeats=10",
           "model.num_transformer_layers=2"])
#: Only timers: the counting and memory passes add nothing to a time comparison.
_TIMING_ONLY = ["collectors=[payload,cpu_time]", "summary=false"]


def profile(overrides: Sequence[str], directory: Path) -> None:
    """One run of ``python -m zoo.profile`` in its own process, into ``directory``."""
    command = [sys.executable, "-m", "zoo.profile", *overrides, *_TIMING_ONLY,
               f"hydra.run.dir={directory}"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")


def compare(a: Sequence[str], b: Sequence[str], root: Path, min_change: float,
            loaded: bool) -> tuple[pd.DataFrame, str, str]:
    """Profile ``a`` and ``b`` into ``root`` and return the comparison and both noise lines."""
    profile(a, root / "a")
    profile(b, root / "b")
    first, second = read_run(root / "a"), read_run(root / "b")
    return (compare_runs(first, second, min_change=min_change, loaded=loaded),
            noise_summary(first.meta), noise_summary(second.meta))


def _significant(table: pd.DataFrame) -> list[str]:
    rows = table[table["significant"].fillna(False).astype(bool)]
    return [f"{row.stage}[{int(row.call_index)}] {(row.time_ratio - 1) * 100:+.1f}%"
            for row in rows.itertuples()]


def noise_trial(overrides: Sequence[str], tries: int, min_change: float, root: Path,
                loaded: bool) -> tuple[int, int]:
    """Run the A/A trial ``tries`` times; print each try; return the tries with an alarm and
    those whose significance was withheld (a loaded machine)."""
    alarms = withheld = 0
    for attempt in range(tries):
        table, noise_a, noise_b = compare(overrides, overrides, root / f"try{attempt}",
                                          min_change, loaded)
        flagged = _significant(table)
        alarms += bool(flagged)
        held = str(table["withheld"].iloc[0]) if "withheld" in table else ""
        withheld += bool(held)
        print(f"try {attempt + 1}: {len(flagged)} of {len(table)} rows significant "
              f"{flagged if flagged else ''}{' (withheld: ' + held + ')' if held else ''}"
              f"\n  A: {noise_a}\n  B: {noise_b}", flush=True)
    return alarms, withheld


def gmflow_check(min_change: float, root: Path, loaded: bool) -> bool:
    """Whether GMFlow with 2 transformer layers is significantly faster in ``transformer``."""
    table, noise_a, noise_b = compare(*GMFLOW, root / "gmflow", min_change, loaded)
    rows = table[table["stage"].isin(["transformer", FORWARD])]
    for row in rows.itertuples():
        print(f"gmflow 6 -> 2 transformer layers, {row.stage}: ratio {row.time_ratio:.3f} "
              f"(95% CI {row.time_ratio_ci95_low:.3f}-{row.time_ratio_ci95_high:.3f}), "
              f"significant: {row.significant}")
    print(f"  A: {noise_a}\n  B: {noise_b}")
    if table["withheld"].iloc[0]:
        print(f"  significance withheld: {table['withheld'].iloc[0]}")
    transformer = table[table["stage"] == "transformer"].iloc[0]
    return bool(transformer["significant"] and transformer["time_ratio"] < 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tries", type=int, default=10)
    parser.add_argument("--min-change", type=float, default=MIN_CHANGE)
    parser.add_argument("--gmflow", action="store_true",
                        help="also check that 2 transformer layers are significantly faster")
    parser.add_argument("--loaded", action="store_true",
                        help="compute significance even when a machine was loaded above its "
                             "cores (zoo.compare --loaded)")
    parser.add_argument("overrides", nargs="*", help="the configuration (after --)")
    args = parser.parse_args()
    overrides = args.overrides or DEFAULT
    with tempfile.TemporaryDirectory(prefix="compare_noise_") as folder:
        root = Path(folder)
        if args.tries:
            alarms, withheld = noise_trial(overrides, args.tries, args.min_change, root,
                                           args.loaded)
            print(f"{alarms} of {args.tries} tries marked a stage significant between two runs "
                  f"of one configuration ({' '.join(overrides)}); target: at most "
                  f"{args.tries // 10}. {withheld} tries withheld significance (a machine "
                  f"loaded above its cores).")
        if args.gmflow:
            print("transformer significantly faster:",
                  gmflow_check(args.min_change, root, args.loaded))


if __name__ == "__main__":
    main()
