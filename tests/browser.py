"""Render a page in a real browser: Debian's ``chromium``, headless, one launch per page that
dumps the DOM after the scripts ran, takes a screenshot and keeps the console's lines."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

__all__ = ["chromium", "Rendered", "render"]

_CONSOLE = re.compile(r":CONSOLE(?:\(\d+\))?:?\d*\]\s*(.*)")


def chromium() -> Optional[str]:
    """The path of the ``chromium`` (or ``chromium-browser``) executable, or ``None``."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class Rendered:
    """What the browser made of a page: the DOM after its scripts ran, the console's lines,
    and the screenshot's path."""

    dom: str
    console: list[str]
    screenshot: Path


def render(page: Path, screenshot: Path, *, width: int = 1400, height: int = 2400,
           wait_ms: int = 20000, fragment: str = "") -> Rendered:
    """Open ``page`` headless (the network is never needed: the page is self-contained) and
    return its DOM and console after ``wait_ms`` of virtual time, with a screenshot;
    ``fragment``: what follows ``#`` in the address (``stage=conv%230``)."""
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--no-first-run", "--enable-logging=stderr", "--v=0",
               f"--virtual-time-budget={wait_ms}", f"--window-size={width},{height}",
               f"--screenshot={screenshot}", "--dump-dom",
               page.resolve().as_uri() + (f"#{fragment}" if fragment else "")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=True)
    console = [m.group(1) for m in map(_CONSOLE.search, done.stderr.splitlines()) if m]
    return Rendered(done.stdout, console, screenshot)
