"""``meta.json``: what a run was, where and when."""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import shlex
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import torch

__all__ = ["run_metadata", "device_description", "host_name"]

_PACKAGES = ("torch", "torchvision", "timm", "numpy", "pandas", "hydra-core", "omegaconf")


def host_name() -> str:
    """This machine's host name."""
    return socket.gethostname()


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what :mod:`platform` says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_description(device: str) -> str:
    """A readable name of ``device`` (``cpu``, ``cuda``, ``cuda:1`` or ``meta``)."""
    kind = torch.device(device).type
    if kind == "cuda":
        return torch.cuda.get_device_name(torch.device(device))
    if kind == "meta":
        return "meta (no computation)"
    return cpu_name()


def _git_commit() -> Optional[str]:
    try:
        result = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).resolve().parent, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return (result.stdout.strip() or None) if result.returncode == 0 else None


def _versions() -> dict[str, Optional[str]]:
    versions: dict[str, Optional[str]] = {"python": sys.version.split()[0]}
    for package in _PACKAGES:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return versions


def typed_command() -> str:
    """The command line as it was typed: ``python -m zoo.profile model=gmflow`` rather than the
    path of the module's file that ``sys.argv[0]`` holds under ``-m``."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    first = sys.argv[0] if sys.argv else "python"
    if spec is not None and spec.name and not spec.name.endswith("__main__"):
        program = f"python -m {spec.name}"
    else:  # a console command; one that dispatches to a tool names it: "stagezoo profile"
        program = " ".join(map(shlex.quote, first.split(" "))) if not os.path.exists(first) \
            else shlex.quote(first)
    return " ".join([program, *map(shlex.quote, sys.argv[1:])])


def run_metadata(config: Any, device: str, **extra: Any) -> dict[str, Any]:
    """The contents of ``meta.json``: config, versions, device, host, git commit, time."""
    return {
        "config": config,
        "versions": _versions(),
        "device": device,
        "device_name": device_description(device),
        "cuda_version": torch.version.cuda,
        "host": host_name(),
        "platform": platform.platform(),
        "cpu_threads": torch.get_num_threads(),
        "git_commit": _git_commit(),
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": typed_command(),
        **extra,
    }
