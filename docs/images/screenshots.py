"""Make the report pages that docs/report.md and the README show, and their screenshots.

Runs, in ``--work`` (default ``results/screenshots``): Faster R-CNN at ``model.stage_depth=2``
on a 128x128 input, GMFlow on 64x96, resnet50 at ``model.stage_depth=3`` (over 100 stage
calls), resnet18 at ``model.stage_depth=3``, a comparison of resnet18 at 64x64 and 96x96, and
a sweep of SwiftNet over ``input.size``; each page is shot in headless chromium at 1400x1000 (what a reader sees first)
and at its full height (``<name>_full.png``, to look at every chart). The four that the docs
show are copied to ``docs/images/report_*.png``::

    python docs/images/screenshots.py            # all, then copy the docs' four
    python docs/images/screenshots.py --shots    # only shoot the pages already made
"""

from __future__ import annotations

import argparse
import base64
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from page_draw import Browser  # noqa: E402

#: Each run: its folder name and the options of ``python -m zoo.profile``.
RUNS = {
    "faster_rcnn": ["model=faster_rcnn", "model.stage_depth=2", "input.size=[128,128]"],
    "gmflow": ["model=gmflow", "input.size=[64,96]"],
    "resnet50": ["model=torchvision", "model.arch=resnet50", "model.stage_depth=3",
                 "input.size=[64,64]"],
    "resnet18": ["model=torchvision", "model.arch=resnet18", "model.stage_depth=3",
                 "input.size=[64,64]"],
    "resnet18_96": ["model=torchvision", "model.arch=resnet18", "model.stage_depth=3",
                    "input.size=[96,96]"],
}
#: A sweep: its folder name and its options (``-m``).
SWEEP = ("sweep", ["model=swiftnet", "input.size=[64,128],[128,256]"])
#: The screenshots the docs show: their file in docs/images, the page, the stage pinned.
DOCS = {"report_run.png": ("faster_rcnn/report.html", ""),
        "report_stage_detail.png": ("resnet18/report.html", "stage=layer2.0%230"),
        "report_comparison.png": ("compare.html", ""),
        "report_sweep.png": ("sweep/report.html", "")}


def _profile(work: Path, only: Optional[list[str]] = None) -> None:
    python = [sys.executable, "-m"]
    common = ["device=cpu", "run.repeats=5", "report=true", "plots=true", "run.overwrite=true"]
    for name, options in RUNS.items():
        if only is None or name in only:
            subprocess.run([*python, "zoo.profile", *options, *common,
                            f"hydra.run.dir={work / name}"], cwd=ROOT, check=True)
        else:  # the run as it was, its page made again
            subprocess.run([*python, "zoo.report", str(work / name)], cwd=ROOT, check=True)
    name, options = SWEEP
    if only is None or name in only:
        shutil.rmtree(work / name, ignore_errors=True)  # a sweep folder is written afresh
        subprocess.run([*python, "zoo.profile", "-m", *options, "device=cpu", "run.repeats=3",
                        f"hydra.sweep.dir={work / name}"], cwd=ROOT, check=True)
    subprocess.run([*python, "zoo.report", str(work / name), "--overwrite"], cwd=ROOT,
                   check=True)
    subprocess.run([*python, "zoo.report", str(work / "resnet18"), str(work / "resnet18_96"),
                    "--out", str(work / "compare.html"), "--overwrite"], cwd=ROOT, check=True)


def shoot(browser: Browser, page: Path, out: Path, fragment: str = "",
          full: bool = False) -> None:
    """A screenshot of ``page`` (``#fragment``) once its charts are drawn: the 1400x1000
    window, or its whole height."""
    target = browser.call("Target.createTarget", url="about:blank")["targetId"]
    session = browser.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    browser.call("Emulation.setDeviceMetricsOverride", session, width=1400, height=1000,
                 deviceScaleFactor=1, mobile=False)
    browser.call("Page.enable", session)
    browser.call("Page.navigate", session, url=page.resolve().as_uri()
                 + (f"#{fragment}" if fragment else ""))
    drawn = ("new Promise((done) => { const wait = () => document.body && "
             "document.body.dataset.chartsDrawn !== undefined ? setTimeout(done, 300) : "
             "setTimeout(wait, 50); wait(); })")
    browser.call("Runtime.evaluate", session, expression=drawn, awaitPromise=True)
    if full:
        height = browser.call("Runtime.evaluate", session, returnByValue=True,
                              expression="document.documentElement.scrollHeight")
        browser.call("Emulation.setDeviceMetricsOverride", session, width=1400,
                     height=int(height["result"]["value"]), deviceScaleFactor=1, mobile=False)
        browser.call("Runtime.evaluate", session, awaitPromise=True,
                     expression="new Promise((done) => setTimeout(done, 500))")
    shot = browser.call("Page.captureScreenshot", session, format="png")
    out.write_bytes(base64.b64decode(shot["data"]))
    browser.call("Target.closeTarget", targetId=target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=ROOT / "results" / "screenshots")
    parser.add_argument("--shots", action="store_true", help="only shoot the pages made")
    parser.add_argument("--only", nargs="*", default=None,
                        help="profile only these runs (by name; the sweep as 'sweep')")
    args = parser.parse_args()
    work = args.work.resolve()
    if not args.shots:
        _profile(work, args.only)
    shots = work / "shots"
    shots.mkdir(parents=True, exist_ok=True)
    pages = {name: work / name / "report.html" for name in RUNS}
    pages.update(compare=work / "compare.html", sweep=work / SWEEP[0] / "report.html")
    browser = Browser()
    try:
        for name, page in pages.items():
            shoot(browser, page, shots / f"{name}.png")
            shoot(browser, page, shots / f"{name}_full.png", full=True)
        for image, (page, fragment) in DOCS.items():
            shoot(browser, work / page, shots / image, fragment)
    finally:
        browser.close()
    for image in DOCS:
        shutil.copyfile(shots / image, ROOT / "docs" / "images" / image)
    print(f"screenshots in {shots}; the docs' four copied to docs/images")


if __name__ == "__main__":
    main()
