"""The stage calls of a run as a tree: who is whose parent, and each call's own share of an
additive metric (what an icicle chart needs)."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd

from ...statistics.coverage import OTHER
from ..view import forward_order
from .formatting import stage_key

__all__ = ["ROOT", "stage_calls", "parent_keys", "exclusive_values", "collapse_chains",
           "CHAIN"]

#: What joins the names of a chain of calls drawn as one block.
CHAIN = " \u203a "

#: The key of the tree's root: the whole forward.
ROOT = "(forward)"


def stage_calls(stages: pd.DataFrame, other: bool = False) -> pd.DataFrame:
    """The stage rows (probes left out; ``other`` rows too unless ``other``) in forward order
    (:func:`~profiling.reports.view.forward_order`: each ``other`` row under its parent),
    with their ``key``."""
    kinds = ("stage", OTHER) if other else ("stage",)
    rows = forward_order(stages[stages["kind"].isin(kinds)] if "kind" in stages else stages)
    return rows.assign(key=[stage_key(s, c) for s, c in zip(rows["stage"], rows["call_index"])])


def parent_keys(calls: pd.DataFrame) -> list[str]:
    """The key of each call's parent call (:data:`ROOT` for a top-level one).

    The rows are in the order the calls started, so a call's parent is the last call one
    level up that started before it.
    """
    open_calls: list[str] = []
    parents = []
    for key, depth in zip(calls["key"], calls["depth"].astype(int)):
        del open_calls[depth:]
        parents.append(open_calls[depth - 1] if 0 < depth <= len(open_calls) else ROOT)
        open_calls.append(key)
    return parents


def exclusive_values(calls: pd.DataFrame, parents: list[str], values: pd.Series,
                     total: Optional[float] = None) -> tuple[np.ndarray, float]:
    """Each call's value less its children's (never below 0), and the root's own value
    (``total`` less the top-level calls', when ``total`` is given; else 0).

    Drawn with plotly's ``branchvalues="remainder"``, a call is then as wide as its own value
    or its children together, whichever is larger: exact for additive metrics (time, FLOPs).
    """
    own = pd.to_numeric(values, errors="coerce").fillna(0.0).clip(lower=0).to_numpy(float)
    children = dict.fromkeys([*calls["key"], ROOT], 0.0)
    for parent, value in zip(parents, own):
        children[parent] += value
    exclusive = np.array([max(0.0, v - children[k]) for k, v in zip(calls["key"], own)])
    root = max(0.0, float(total) - children[ROOT]) if total is not None else 0.0
    return exclusive, root


def collapse_chains(calls: pd.DataFrame, parents: list[str], labels: list[str]
                    ) -> tuple[np.ndarray, list[str], list[str]]:
    """Each stage call that is its parent's only stage call drawn as one block with it
    (``backbonefpn_body › backbone.body``): a chain of nested calls of the same width is one
    level of information, not several.

    Returns which rows stay, and for every row its parent and label after the merges (a
    merged child's children and ``other`` row move up to the block, which keeps the outer
    call's key).
    """
    keys = list(calls["key"])
    parents, labels = list(parents), list(labels)
    stage = (calls["kind"] == "stage").to_numpy() if "kind" in calls else np.ones(len(keys), bool)
    keep = np.ones(len(keys), bool)
    position = {key: index for index, key in enumerate(keys)}
    merged = True
    while merged:
        merged = False
        children: dict[str, list[int]] = {}
        for index, parent in enumerate(parents):
            if keep[index] and stage[index]:
                children.setdefault(parent, []).append(index)
        for parent, inside in children.items():
            if parent == ROOT or len(inside) != 1:
                continue
            child = inside[0]
            labels[position[parent]] += CHAIN + labels[child]
            keep[child] = False
            parents = [parent if p == keys[child] else p for p in parents]
            merged = True
            break
    return keep, parents, labels
