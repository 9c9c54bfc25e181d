"""Regenerate ``results/reference/DEVICE``: every zoo model at its default input, one sweep.

    python benchmarks/reference_results.py --device cpu      # run the sweep, then describe it
    python benchmarks/reference_results.py --describe-only   # the note and table of what is there

The sweep writes one folder per model; the files that are not kept in the repository (plots
other than those the docs show, the module and layer tables: each run writes them again) are
removed, so that the tracked results stay small. ``MACHINE.md`` beside the runs says where and
when they were measured, and the Markdown table that it prints is the one the README shows
for the CPU and docs/gpu.md for CUDA (a test, ``tests/test_reference_results.py``, keeps them
equal).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from profiling.reports.numbers import significant  # noqa: E402
from profiling.reports import read_run  # noqa: E402

MODELS = ("faster_rcnn", "gmflow", "gmflow_refine", "gmflow_unet", "swiftnet", "swin_unet")
#: What each run keeps in the repository; the plots that the docs link to are kept too.
KEPT = {"stages.csv", "times.csv", "payload.log", "meta.json"}
KEPT_PLOTS = {("cpu", "gmflow", "time.png"), ("cpu", "faster_rcnn", "roofline.png")}


def run_sweep(device: str, folder: Path) -> None:
    """Profile every model of :data:`MODELS` on ``device`` into ``folder`` (replaced)."""
    if folder.exists():
        shutil.rmtree(folder)
    subprocess.run([sys.executable, "-m", "zoo.profile", "-m", f"model={','.join(MODELS)}",
                    f"device={device}", "plots=true", "summary=false",
                    f"hydra.sweep.dir={folder}", "hydra.sweep.subdir=${model.name}"],
                   check=True, cwd=ROOT)


def prune(device: str, folder: Path) -> None:
    """Remove what the repository does not keep (see :data:`KEPT`)."""
    for run in sorted(p for p in folder.iterdir() if p.is_dir()):
        for path in sorted(run.rglob("*"), reverse=True):
            plot = (device, run.name, path.name) in KEPT_PLOTS
            if path.is_file() and path.name not in KEPT and not plot:
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
    for name in ("multirun.yaml", ".stagezoo"):  # the sweep's own files, not results
        (folder / name).unlink(missing_ok=True)


def _row(run: Path) -> dict[str, str]:
    record = read_run(run)
    stages, meta = record.stages, record.meta
    top = stages[(stages["depth"] == 0) & (stages.get("kind", "stage") == "stage")]
    time = next((c for c in ("cuda_time_ms_median", "cpu_time_ms_median") if c in top), None)
    slowest = top.groupby("stage", sort=False)[time].sum().idxmax() if time else "-"
    peak = next((c for c in ("cuda_peak_mb", "tensor_peak_mb") if c in top), None)
    first = stages.sort_values("order").iloc[0]
    totals = meta.get("totals") or {}
    return {"model": f"`{run.name}`", "input": str(first["in_shapes"]),
            "parameters": f"{meta['parameters']:,}",
            "forward (ms)": significant(float(np.median(meta["forward_ms"]))),
            "GMACs": significant(totals["macs"] / 1e9),
            "GFLOPs": significant(totals["flops"] / 1e9),
            "input payload (MB)": significant(first["in_bytes"] / 1e6),
            "peak (MB)": significant(top[peak].max()) if peak else "-",
            "slowest stage": f"`{slowest}`"}


def reference_table(folder: Path) -> str:
    """The Markdown table of the runs in ``folder``, one row per model."""
    rows = [_row(run) for run in sorted(p for p in folder.iterdir() if (p / "meta.json").is_file())]
    columns = list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "| " + " | ".join("---" for _ in columns) + " |"]
    lines += ["| " + " | ".join(row[c] for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def machine_note(folder: Path, device: str) -> str:
    """``MACHINE.md``: where and when the runs of ``folder`` (on ``device``) were measured,
    from their ``meta.json``."""
    metas = [json.loads((p / "meta.json").read_text()) for p in sorted(folder.iterdir())
             if (p / "meta.json").is_file()]
    first = metas[0]
    versions = ", ".join(f"{k} {v}" for k, v in first["versions"].items())
    times = sorted(m["time"] for m in metas)
    return "\n".join([
        f"# Reference runs on {device}", "",
        f"* device: {first['device_name']} ({first['cpu_threads']} threads), host "
        f"`{first['host']}`, {first['platform']}",
        f"* measured: {times[0]} to {times[-1]}, one model after the other",
        f"* versions: {versions}",
        f"* code: git commit {first['git_commit']}",
        f"* made again by: `python benchmarks/reference_results.py --device {device}`",
        "", "Each model at its default input, batch 1, random weights, median of the timed "
        "forwards; the times vary from one sweep to the next on a shared machine (see each "
        "run's noise in its meta.json).", ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--describe-only", action="store_true",
                        help="do not run the sweep: prune, write MACHINE.md and print the table")
    args = parser.parse_args()
    folder = ROOT / "results" / "reference" / args.device
    if not args.describe_only:
        run_sweep(args.device, folder)
    prune(args.device, folder)
    (folder / "MACHINE.md").write_text(machine_note(folder, args.device))
    print(reference_table(folder))


if __name__ == "__main__":
    main()
