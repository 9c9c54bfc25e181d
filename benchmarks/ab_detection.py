"""How well ``zoo.compare --run A --run B`` (interleaved A/B, its default rounds) finds a real
10% change, and how often it raises a false alarm between identical configurations.

The change is exact and lives in one stage: a ViT-Tiny (timm) at 96x96 with 10 blocks against
the same with 11 blocks puts 10% more work into the ``blocks`` stage and nothing elsewhere.
Each try compares the two (``found``: ``blocks`` marked significant, slower) and compares the
10-block configuration with itself (``false alarm``: any row marked significant). Targets:
found in at least 9 of 10 tries, at most 1 false alarm in 10.

    python benchmarks/ab_detection.py --tries 10
    python benchmarks/ab_detection.py --tries 10 --rounds 40

Each try prints the load average and the two sides' forward CV, so that a miss on a loaded
machine can be told apart. The models are built once per comparison, in this process, as
``zoo.compare`` builds them.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from profiling.reports.comparison import FORWARD
from zoo.tools.ab_compare import AB_ROUNDS, run_ab

#: A ViT-Tiny of 10 blocks at 96x96 (36 tokens); B of the detection trial has 11.
BASE = ("model=timm model.arch=vit_tiny_patch16_224 input.size=[96,96] run.warmup=2 "
        "collectors=[payload,cpu_time] model.arch_options={img_size:96,depth:%d}")


def _try(a: str, b: str, rounds: int, folder: Path) -> tuple:
    table, first, second, _ = run_ab([a, b], folder, rounds=rounds)
    rows = table.set_index("stage")
    load = (first.meta.get("noise") or {}).get("load_average_before", [float("nan")])[0]
    cvs = [(r.meta.get("noise") or {}).get("forward_cv", float("nan")) for r in (first, second)]
    return rows, load, cvs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=AB_ROUNDS)
    args = parser.parse_args()
    found = alarms = 0
    with tempfile.TemporaryDirectory() as root:
        for index in range(args.tries):
            rows, load, cvs = _try(BASE % 10, BASE % 11, args.rounds,
                                   Path(root) / f"change{index}")
            blocks = rows.loc["blocks"]
            hit = bool(blocks["significant"]) and blocks["time_ratio"] > 1
            found += hit
            print(f"try {index}: 10 -> 11 blocks: blocks ratio {blocks['time_ratio']:.3f} "
                  f"[{blocks['time_ratio_ci95_low']:.3f}, {blocks['time_ratio_ci95_high']:.3f}]"
                  f" {'found' if hit else 'MISSED'}; load {load:.2f}, forward CV "
                  f"{cvs[0]:.1%} / {cvs[1]:.1%}", flush=True)
            rows, load, cvs = _try(BASE % 10, BASE % 10, args.rounds,
                                   Path(root) / f"same{index}")
            flagged = sorted(rows.index[rows["significant"].fillna(False).astype(bool)])
            alarms += bool(flagged)
            print(f"try {index}: identical: "
                  f"{'false alarm on ' + ', '.join(flagged) if flagged else 'no false alarm'} "
                  f"(forward ratio {rows.loc[FORWARD, 'time_ratio']:.3f}); load {load:.2f}",
                  flush=True)
    print(f"found the 10% change in {found} of {args.tries} tries (target >= 9 in 10); "
          f"false alarms in {alarms} of {args.tries} identical tries (target <= 1 in 10); "
          f"{args.rounds} rounds, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
