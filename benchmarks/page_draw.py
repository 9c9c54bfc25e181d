"""How soon a report page's charts are drawn in headless chromium, in real time.

``--virtual-time-budget`` (what the browser tests use) runs a page on a virtual clock, so its
``performance.now()`` says nothing about a reader's wait. This script drives chromium over the
DevTools protocol on a pipe (``--remote-debugging-pipe``, no extra package), opens each page
given, waits until its ``<body data-charts-drawn>`` appears and reads ``data-view-ms`` (the
charts in the first screen drawn), ``data-charts-ms`` (every chart drawn) and
``data-plotly-ms`` (plotly.js ready), in ms after navigation began, as the page's script and
loader write them; each page ``--rounds`` times, alternating, so that two pages meet the same
machine:

    python benchmarks/page_draw.py results/run/report.html old/report.html --rounds 5

A page without ``data-charts-ms`` (one written before the loader) is timed by polling for
``data-charts-drawn`` every 20 ms; one without ``data-view-ms`` (written before the charts in
view were drawn first) has its charts in view drawn when all are.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

_POLL = ("(() => { const b = document.body; if (!b || b.dataset.chartsDrawn === undefined) "
         "return null; const all = b.dataset.chartsMs ? Number(b.dataset.chartsMs) : "
         "performance.now(); return [all, Number(b.dataset.plotlyMs || 0), "
         "Number(b.dataset.viewMs || all)]; })()")


class Browser:
    """Headless chromium on a DevTools pipe: fd 3 carries commands, fd 4 replies."""

    def __init__(self) -> None:
        commands_read, self._commands = os.pipe()
        self._replies, replies_write = os.pipe()
        # above 4, so that moving them to 3 and 4 in the child overwrites neither
        for low, high in ((commands_read, 20), (replies_write, 21)):
            os.dup2(low, high)
            os.close(low)
        commands_read, replies_write = 20, 21
        executable = shutil.which("chromium") or shutil.which("chromium-browser")
        self._process = subprocess.Popen(
            [executable, "--headless", "--no-sandbox", "--disable-gpu",
             "--remote-debugging-pipe", "--window-size=1400,1000", "about:blank"],
            pass_fds=(3, 4), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=lambda: (os.dup2(commands_read, 3), os.dup2(replies_write, 4)))
        os.close(commands_read)
        os.close(replies_write)
        self._next, self._buffer = 0, b""

    def call(self, method: str, session: str = "", **params) -> dict:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self._buffer:
                self._buffer += os.read(self._replies, 1 << 20)
            raw, self._buffer = self._buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._next:
                return reply.get("result", {})

    def close(self) -> None:
        self._process.kill()
        self._process.wait()


def draw_time(browser: Browser, page: Path, limit_s: float = 60.0
              ) -> tuple[float, float, float]:
    """(ms to every chart drawn, ms to plotly.js ready or 0 where the page does not say, ms to
    the charts in view drawn) of one fresh load of ``page``."""
    target = browser.call("Target.createTarget", url="about:blank")["targetId"]
    session = browser.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    browser.call("Page.navigate", session, url=page.resolve().as_uri())
    start = time.monotonic()
    try:
        while time.monotonic() - start < limit_s:
            value = browser.call("Runtime.evaluate", session, expression=_POLL,
                                 returnByValue=True)["result"].get("value")
            if value:
                return float(value[0]), float(value[1]), float(value[2])
            time.sleep(0.02)
        raise RuntimeError(f"{page}: no charts drawn in {limit_s:.0f} s")
    finally:
        browser.call("Target.closeTarget", targetId=target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    browser = Browser()
    times: dict[Path, list[tuple[float, float, float]]] = {page: [] for page in args.pages}
    try:
        for _ in range(args.rounds):
            for page in args.pages:
                times[page].append(draw_time(browser, page))
    finally:
        browser.close()
    for page, rounds in times.items():
        drawn, ready, view = (statistics.median(t[i] for t in rounds) for i in range(3))
        spread = f"{min(t[2] for t in rounds):.0f}-{max(t[2] for t in rounds):.0f}"
        print(f"{page}: {page.stat().st_size / 1e6:.2f} MB, charts in view drawn {view:.0f} ms "
              f"({spread}), all charts {drawn:.0f} ms (medians of {len(rounds)}"
              + (f"; plotly.js ready at {ready:.0f} ms)" if ready else ")"))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
