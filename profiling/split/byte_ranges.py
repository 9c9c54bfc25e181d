"""The exact bytes of a storage that a tensor (a view) reaches, as sorted disjoint ranges.

A view's elements need not fill the span between its first and last byte: ``x[..., :2]`` of a
``[N, 128]`` tensor reads 2 elements of every 128. What a split must transmit is the union of
the elements read, so the ranges here are exact: one ``[start, end)`` byte range per run of
contiguous elements, merged. Allocator padding and the zero-padded tail of a kernel's buffer
that is sliced away are never part of them.

Ranges are two ``int64`` arrays, ``starts`` and ``ends``, sorted and disjoint (touching ranges
are merged), so ``sum(ends - starts)`` is the byte count.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import torch

from ..stages.byte_view import element_bytes

__all__ = ["ByteRanges", "view_ranges", "merge_ranges", "subtract_ranges", "ranges_size",
           "EMPTY", "MAX_RUNS"]

ByteRanges = tuple[np.ndarray, np.ndarray]

#: An empty set of ranges.
EMPTY: ByteRanges = (np.zeros(0, np.int64), np.zeros(0, np.int64))

#: Above this many separate runs, a view is taken as its whole span (first to last byte): an
#: upper bound that keeps a pathological view (a transpose of a huge matrix) from costing
#: more memory than its data. No view of the zoo's models comes near it.
MAX_RUNS = 1 << 22


def _dims(shape: Iterable[int], stride: Iterable[int]) -> list[tuple[int, int]]:
    """``(size, stride)`` of the dimensions that move, outermost (largest stride) first, with
    dimensions that continue each other merged."""
    dims = sorted(((size, abs(step)) for size, step in zip(shape, stride)
                   if size > 1 and step != 0), key=lambda d: -d[1])
    merged: list[list[int]] = []
    for size, step in dims:
        if merged and merged[-1][1] == size * step:
            merged[-1] = [merged[-1][0] * size, step]
        else:
            merged.append([size, step])
    return [(size, step) for size, step in merged]


def view_ranges(tensor: torch.Tensor) -> ByteRanges:
    """The byte ranges of its storage that ``tensor`` reaches (any device, meta included)."""
    if tensor.numel() == 0:
        return EMPTY
    itemsize = element_bytes(tensor)
    first = tensor.storage_offset()
    if tensor.is_contiguous():
        return (np.array([first * itemsize], np.int64),
                np.array([(first + tensor.numel()) * itemsize], np.int64))
    dims = _dims(tensor.shape, tensor.stride())
    run = 1
    if dims and dims[-1][1] == 1:
        run = dims.pop()[0]
    runs = 1
    for size, _ in dims:
        runs *= size
    if runs > MAX_RUNS:
        reach = sum((size - 1) * step for size, step in dims) + run
        return (np.array([first * itemsize], np.int64),
                np.array([(first + reach) * itemsize], np.int64))
    offsets = np.zeros(1, np.int64)
    for size, step in dims:  # outermost first, so offsets come out sorted
        offsets = (offsets[:, None] + np.arange(size, dtype=np.int64) * step).ravel()
    starts = (offsets + first) * itemsize
    return merge_ranges([(starts, starts + run * itemsize)])


def merge_ranges(parts: Iterable[ByteRanges]) -> ByteRanges:
    """The union of several sets of ranges, sorted and disjoint."""
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return EMPTY
    if len(parts) == 1:
        return parts[0]
    if all(len(p[0]) == 1 for p in parts):  # the common case, without numpy's overhead
        spans = sorted((int(p[0][0]), int(p[1][0])) for p in parts)
        starts, ends = [spans[0][0]], [spans[0][1]]
        for start, end in spans[1:]:
            if start > ends[-1]:
                starts.append(start)
                ends.append(end)
            else:
                ends[-1] = max(ends[-1], end)
        return np.array(starts, np.int64), np.array(ends, np.int64)
    starts = np.concatenate([p[0] for p in parts])
    ends = np.concatenate([p[1] for p in parts])
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], np.maximum.accumulate(ends[order])
    new = np.ones(len(starts), bool)
    new[1:] = starts[1:] > ends[:-1]  # touching ranges merge
    last = np.append(new[1:], True)
    return starts[new], ends[last]


def ranges_size(ranges: ByteRanges) -> int:
    """The bytes the ranges cover."""
    return int((ranges[1] - ranges[0]).sum())


def _inside(points: np.ndarray, ranges: ByteRanges) -> np.ndarray:
    """Whether each point lies in one of the (sorted, disjoint) ranges."""
    index = np.searchsorted(ranges[0], points, side="right") - 1
    inside = index >= 0
    inside[inside] = points[inside] < ranges[1][index[inside]]
    return inside


def subtract_ranges(kept: ByteRanges, removed: ByteRanges) -> ByteRanges:
    """The bytes of ``kept`` outside ``removed`` (a write that overwrites them)."""
    if not len(kept[0]) or not len(removed[0]):
        return kept
    edges = np.unique(np.concatenate([*kept, *removed]))
    starts, ends = edges[:-1], edges[1:]
    keep = _inside(starts, kept) & ~_inside(starts, removed)
    return merge_ranges([(starts[keep], ends[keep])])
