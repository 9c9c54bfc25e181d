"""How noisy the machine was while a run was timed, and whether its timings can be trusted.

:func:`machine_state` reads the load average, the usable cores, torch's threads and the CPU
frequency governor (where Linux lets it be read). :func:`noise_report` joins the states before
and after the timed forwards with the forward times' spread; it is what ``meta.json`` records
under ``noise``. :func:`unreliable_reasons` says why a run's timings should not be trusted: a
machine loaded above its core count, or forward times that vary by more than 5%.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import torch

from .intervals import (MEDIAN_CI_METHOD, coefficient_of_variation, interval_label,
                        median_interval)

__all__ = ["machine_state", "noise_report", "unreliable_reasons", "loaded_reason", "noise_line",
           "MAX_FORWARD_CV", "usable_cores"]

#: Above this coefficient of variation of the forward times, the timings are called unreliable.
MAX_FORWARD_CV = 0.05

_GOVERNORS = "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container or ``taskset``
    narrows; ``os.cpu_count()`` counts the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _load_average() -> Optional[list[float]]:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def _governor() -> Optional[str]:
    """The CPU frequency governor (``"performance"``, ``"powersave"``, ...), several
    ``/``-joined when the cores differ; ``None`` where the system does not expose it."""
    names = set()
    for path in Path("/").glob(_GOVERNORS.lstrip("/")):
        try:
            names.add(path.read_text().strip())
        except OSError:
            continue
    return "/".join(sorted(names)) or None


def machine_state() -> dict[str, Any]:
    """Now: ``load_average`` (1, 5 and 15 minutes, or ``None``), usable ``cores``,
    torch's intra-op ``threads`` and the frequency ``governor`` (``None`` where unreadable)."""
    return {"load_average": _load_average(), "cores": usable_cores(),
            "threads": torch.get_num_threads(), "governor": _governor()}


def noise_report(before: Mapping[str, Any], after: Mapping[str, Any],
                 forward_ms: Sequence[float]) -> dict[str, Any]:
    """What ``meta.json`` records under ``noise``: the machine before and after the timed
    forwards (:func:`machine_state`), the forward times' coefficient of variation
    (``forward_cv``), their median and its order-statistics interval (the method of every
    ``*_median_ci95_*`` column, named in ``interval_method``: asked for 95%, it says
    its true coverage for the repeats made, 93.7% for 5), and the reasons the
    timings are unreliable (``unreliable``, empty when none)."""
    times = [float(t) for t in forward_ms]
    low, high = median_interval(times)
    label = interval_label(len(times))[0]
    report = {
        "load_average_before": before.get("load_average"),
        "load_average_after": after.get("load_average"),
        "cores": before.get("cores"), "threads": before.get("threads"),
        "governor": before.get("governor"),
        "repeats": len(times),
        "forward_median_ms": float(np.median(times)) if times else None,
        "forward_median_ci95_ms": None if math.isnan(low) else [low, high],
        "interval_method": MEDIAN_CI_METHOD.replace("95%", label[:-len(" CI")]),
        "forward_cv": _rounded(coefficient_of_variation(times)),
    }
    report["unreliable"] = unreliable_reasons(report)
    return report


def _rounded(value: float) -> Optional[float]:
    return None if math.isnan(value) else round(value, 5)


def loaded_reason(noise: Mapping[str, Any]) -> str:
    """``"the machine was loaded (...)"`` when the 1-minute load average was above the cores
    before or after the timed forwards, else ``""``."""
    cores = noise.get("cores") or 0
    loads = [(when, noise.get(f"load_average_{when}")) for when in ("before", "after")]
    high = [(when, load[0]) for when, load in loads if load and cores and load[0] > cores]
    if not high:
        return ""
    shown = ", ".join(f"{load:.2f} {when}" for when, load in high)
    return f"the machine was loaded (load average {shown}, above its {cores} cores)"


def unreliable_reasons(noise: Mapping[str, Any]) -> list[str]:
    """Why the timings of a run with this ``noise`` record cannot be trusted (``[]``: no
    reason known): a 1-minute load average above the cores before or after the timed
    forwards, or a forward CV above :data:`MAX_FORWARD_CV`."""
    loaded = loaded_reason(noise)
    reasons = [loaded] if loaded else []
    cv = noise.get("forward_cv")
    if cv is not None and cv > MAX_FORWARD_CV:
        reasons.append(f"the forward times vary by {cv:.1%} (coefficient of variation, "
                       f"above {MAX_FORWARD_CV:.0%})")
    return reasons


def noise_line(noise: Optional[Mapping[str, Any]]) -> str:
    """The line that ends a run whose timings are unreliable (``""`` when they are not)."""
    reasons = unreliable_reasons(noise or {})
    return f"timings are unreliable: {'; '.join(reasons)}" if reasons else ""
