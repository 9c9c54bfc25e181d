"""The export cache's size bound (profiling.runtimes.cache_bound): past it the least recently
used entries go, never the one just kept, never what is not an entry; a read counts as a use."""

from __future__ import annotations

import os
from pathlib import Path

from export_cache_models import Scaled, run_cached, tiny_model
from profiling.runtimes.cache_bound import entry_bytes, prune
from runtime_models import needs_onnxruntime


def _entry(cache: Path, digit: str, size: int, used: float) -> Path:
    """An entry folder named like an export key, holding ``size`` bytes, last used at ``used``."""
    entry = cache / (digit * 32)
    entry.mkdir(parents=True)
    (entry / "model.onnx").write_bytes(b"x" * size)
    os.utime(entry, (used, used))
    return entry


def test_the_least_recently_used_entries_go_until_the_cache_is_under_its_bound(tmp_path):
    cache = tmp_path / "cache"
    old, middle, new = (_entry(cache, d, 1000, t) for d, t in (("a", 100), ("b", 200),
                                                               ("c", 300)))
    (cache / ".incoming-1-x").mkdir()  # a staging folder and a stranger's file: not entries
    (cache / "README").write_bytes(b"y" * 5000)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_bytes(b"z" * 5000)
    (cache / ("d" * 32)).symlink_to(outside)  # a link is not an entry, and never followed
    assert prune(cache, 2000, keep=new) == [old]
    assert prune(cache, 1999, keep=new) == [middle]
    assert sorted(p.name for p in cache.iterdir()) == \
        [".incoming-1-x", "README", "c" * 32, "d" * 32]
    assert (outside / "big").stat().st_size == 5000


def test_the_entry_just_kept_stays_even_alone_past_the_bound(tmp_path):
    cache = tmp_path / "cache"
    kept = _entry(cache, "a", 3000, 100)  # the oldest, but the run has just written it
    other = _entry(cache, "b", 1000, 200)
    assert prune(cache, 500, keep=kept) == [other]
    assert entry_bytes(kept) == 3000 and not other.exists()


def test_a_cache_under_its_bound_loses_nothing(tmp_path):
    cache = tmp_path / "cache"
    entries = [_entry(cache, d, 1000, t) for d, t in (("a", 100), ("b", 200))]
    assert prune(cache, 2000, keep=entries[1]) == []
    assert prune(tmp_path / "absent", 0, keep=entries[1]) == []


@needs_onnxruntime
def test_runs_keep_the_cache_under_its_bound_and_a_read_counts_as_a_use(tmp_path):
    cache = tmp_path / "cache"
    runs = {}

    def run(factor: float, limit: int):
        model, x = tiny_model(Scaled, factor=factor)
        profiled = run_cached(model, x, cache, tmp_path / f"work{len(runs)}", cache_limit=limit)
        runs[factor] = profiled
        return profiled

    first = run(2.0, 10**9)
    one_entry = entry_bytes(next(cache.iterdir()))
    assert one_entry > 1000 and first.deployment["export_cache"] == "miss"
    run(3.0, 10**9)
    os.utime(cache / sorted(os.listdir(cache))[0], (1, 1))  # make both look old
    os.utime(cache / sorted(os.listdir(cache))[1], (1, 1))
    hit = run(2.0, 10**9)  # a read: factor 2's entry becomes the most recently used
    assert hit.deployment["export_cache"] == "hit"
    third = run(4.0, 2 * one_entry + one_entry // 2)  # room for two entries of this size
    assert third.deployment["export_cache_note"] == (
        f"export cache {cache}: removed the 1 least recently used entry to stay under "
        f"{(2 * one_entry + one_entry // 2) / 1e9:g} GB")
    assert run(2.0, 10**9).deployment["export_cache"] == "hit"  # kept: it was read last
    assert run(3.0, 10**9).deployment["export_cache"] == "miss"  # gone: used least recently
