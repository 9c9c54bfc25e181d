"""The export cache's entries (profiling.runtimes.cache): checked against their manifest when
read, only regular files inside them opened, a bad one exported again with a note naming it;
a cache folder that cannot be used is left out with a note; the cache never fails a run."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest

from export_cache_models import (ATTACH, Branching, Scaled, leftovers, output_matches,
                                 run_cached, tiny_model)
from profiling.runtimes.cache import MANIFEST, entry_limit, export_key, read_entry
from runtime_models import needs_onnxruntime


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A cache with the whole export of ``Scaled`` and the parts of ``Branching``."""
    folder = tmp_path_factory.mktemp("pristine")
    entries = {}
    for kind in (Scaled, Branching):
        model, x = tiny_model(kind)
        run_cached(model, x, folder / "cache", folder / kind.__name__)
        entries[kind] = export_key(model, (x,), attach=ATTACH)
    return folder / "cache", entries


def _forge_manifest(entry: Path) -> None:
    """Rewrite the manifest to match the entry's files as they now are (links followed),
    as a forger would."""
    files = {}
    for path in entry.iterdir():
        if path.name != MANIFEST and path.is_file():
            data = path.read_bytes()
            files[path.name] = [len(data), hashlib.sha256(data).hexdigest()]
    saved = json.loads((entry / MANIFEST).read_text())
    (entry / MANIFEST).write_text(json.dumps({**saved, "files": files}))


def _corrupt(how: str, entry: Path, other: Path) -> str:
    """Spoil ``entry`` as ``how`` says (``other``: another model's entry); return what the
    note says is wrong."""
    if how == "truncated model.onnx":
        data = (entry / "model.onnx").read_bytes()
        (entry / "model.onnx").write_bytes(data[: len(data) // 2])
        return "model.onnx has fewer bytes than its manifest says"
    if how == "empty stages map":
        (entry / "model.stages.json").write_text("")
        return "model.stages.json has fewer bytes"
    if how == "broken stages map, manifest forged":
        (entry / "model.stages.json").write_text('{"node_stages": [1, 2')
        _forge_manifest(entry)
        return "model.stages.json is broken"
    if how == "another model's onnx":
        shutil.copyfile(other / "part0.onnx", entry / "model.onnx")
        return "model.onnx"
    if how == "another model's onnx, manifest forged":
        shutil.copyfile(other / "part0.onnx", entry / "model.onnx")
        _forge_manifest(entry)
        return "model.onnx is not the graph that model.stages.json describes"
    if how == "not onnx, manifest forged":
        (entry / "model.onnx").write_bytes(b"\x00garbage" * 100)
        _forge_manifest(entry)
        return "model.onnx is not the graph that model.stages.json describes"
    if how == "no manifest (an entry of the old format)":
        (entry / MANIFEST).unlink()
        return "manifest.json: no such file or directory"
    if how == "another entry's manifest":
        shutil.copyfile(other / MANIFEST, entry / MANIFEST)
        return "manifest.json is not this entry's manifest"
    if how == "bit flipped":
        data = bytearray((entry / "model.onnx").read_bytes())
        data[len(data) // 2] ^= 1
        (entry / "model.onnx").write_bytes(bytes(data))
        return "model.onnx's checksum differs from its manifest"
    raise AssertionError(how)


@needs_onnxruntime
@pytest.mark.parametrize("how", [
    "truncated model.onnx", "empty stages map", "broken stages map, manifest forged",
    "another model's onnx", "another model's onnx, manifest forged",
    "not onnx, manifest forged", "no manifest (an entry of the old format)",
    "another entry's manifest", "bit flipped"])
def test_a_corrupt_entry_is_exported_again_with_a_note_naming_the_cache(how, pristine,
                                                                        tmp_path):
    source, keys = pristine
    cache = tmp_path / "cache"
    shutil.copytree(source, cache, symlinks=True)
    entry = cache / keys[Scaled]
    why = _corrupt(how, entry, cache / keys[Branching])
    model, x = tiny_model()
    profiled = run_cached(model, x, cache, tmp_path / "work")
    note = profiled.deployment["export_cache_note"]
    assert note.startswith(f"export cache entry {entry} was unusable (") and why in note, note
    assert note.endswith("): exported again") and "\n" not in note
    assert profiled.deployment["export_cache"] == "miss"
    assert profiled.result.stages["engine"].iloc[0] == "onnxruntime"  # not a PyTorch hybrid
    assert output_matches(profiled, model, x)
    assert read_entry(entry, tmp_path / "check", entry_limit(model)).whole is not None  # sound
    assert leftovers(cache) == []


@needs_onnxruntime
@pytest.mark.parametrize("how, why", [
    ("a part's plan broken", "parts.json has fewer bytes than its manifest says"),
    ("a part's plan emptied, manifest forged", "parts.json is missing or broken"),
    ("a part's stages map of another part", "part0.stages.json has fewer bytes")])
def test_a_corrupt_plan_of_parts_is_exported_again_not_run_in_pytorch(how, why, pristine,
                                                                     tmp_path):
    source, keys = pristine
    cache = tmp_path / "cache"
    shutil.copytree(source, cache, symlinks=True)
    entry = cache / keys[Branching]
    if how == "a part's plan broken":
        (entry / "parts.json").write_text('{"parts": ')
    elif how == "a part's plan emptied, manifest forged":
        (entry / "parts.json").write_text("{}")
        _forge_manifest(entry)
    else:
        shutil.copyfile(entry / "part1.stages.json", entry / "part0.stages.json")
    model, x = tiny_model(Branching)
    profiled = run_cached(model, x, cache, tmp_path / "work")
    assert why in profiled.deployment["export_cache_note"]
    assert set(profiled.deployment["parts"]) == {"encoder", "head"}
    assert output_matches(profiled, model, x)
    assert leftovers(cache) == []


# ---------------------------------------------------------------- only regular files inside


@pytest.fixture
def watchdog():
    """Fail a test that would hang (a FIFO waited on) after 60 seconds instead."""
    def expire(signum, frame):
        raise TimeoutError("the cache waited on something")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def _replace_with(how: str, entry: Path, outside: Path) -> None:
    target = entry / "model.onnx"
    size = target.stat().st_size
    target.unlink()
    if how == "a FIFO":
        os.mkfifo(target)
    elif how == "a link to /dev/zero, manifest forged":
        target.symlink_to("/dev/zero")
        saved = json.loads((entry / MANIFEST).read_text())
        saved["files"]["model.onnx"] = [size, hashlib.sha256(bytes(size)).hexdigest()]
        (entry / MANIFEST).write_text(json.dumps(saved))
    elif how == "a link to a file outside the cache, manifest forged":
        target.symlink_to(outside)
        _forge_manifest(entry)
    else:
        target.mkdir()
        (target / "inside").write_text("x")


@needs_onnxruntime
@pytest.mark.parametrize("how, why", [
    ("a FIFO", "model.onnx is not a regular file"),
    ("a link to /dev/zero, manifest forged", "model.onnx: too many levels of symbolic links"),
    ("a link to a file outside the cache, manifest forged",
     "model.onnx: too many levels of symbolic links"),
    ("a folder", "model.onnx is not a regular file")])
def test_only_regular_files_inside_the_entry_are_read(how, why, pristine, tmp_path, watchdog):
    source, keys = pristine
    cache = tmp_path / "cache"
    shutil.copytree(source, cache, symlinks=True)
    entry = cache / keys[Scaled]
    outside = tmp_path / "outside.onnx"
    shutil.copyfile(cache / keys[Branching] / "part0.onnx", outside)
    _replace_with(how, entry, outside)
    model, x = tiny_model()
    started = time.perf_counter()
    profiled = run_cached(model, x, cache, tmp_path / "work")
    assert time.perf_counter() - started < 30
    assert why in profiled.deployment["export_cache_note"], profiled.deployment
    assert output_matches(profiled, model, x)
    assert entry.is_dir() and not (entry / "model.onnx").is_symlink()  # exported again
    assert outside.read_bytes() == (cache / keys[Branching] / "part0.onnx").read_bytes()


@needs_onnxruntime
@pytest.mark.parametrize("how", ["plan names a file outside", "manifest names a file outside",
                                 "the entry is a link to another entry"])
def test_nothing_outside_the_entry_is_loaded(how, pristine, tmp_path, watchdog):
    source, keys = pristine
    cache = tmp_path / "cache"
    shutil.copytree(source, cache, symlinks=True)
    entry, other = cache / keys[Branching], cache / keys[Scaled]
    (tmp_path / "outside.onnx").write_bytes((entry / "part0.onnx").read_bytes())
    if how == "plan names a file outside":
        plan = json.loads((entry / "parts.json").read_text())
        plan["parts"]["encoder"] = "../../outside.onnx"
        (entry / "parts.json").write_text(json.dumps(plan))
        _forge_manifest(entry)
        why = "parts.json is missing or broken"
    elif how == "manifest names a file outside":
        saved = json.loads((entry / MANIFEST).read_text())
        saved["files"]["../../outside.onnx"] = saved["files"]["part0.onnx"]
        (entry / MANIFEST).write_text(json.dumps(saved))
        why = "manifest.json is not this entry's manifest"
    else:
        shutil.rmtree(entry)
        entry.symlink_to(other)
        why = "the entry is not a folder"
    model, x = tiny_model(Branching)
    profiled = run_cached(model, x, cache, tmp_path / "work")
    assert why in profiled.deployment["export_cache_note"]
    assert set(profiled.deployment["parts"]) == {"encoder", "head"}
    assert output_matches(profiled, model, x)
    assert (other / MANIFEST).is_file() and not entry.is_symlink()  # the link, not its target


# ---------------------------------------------------------------- the cache folder itself


def _unusable(how: str, tmp_path: Path, monkeypatch) -> tuple[Path, str]:
    if how == "a file":
        (tmp_path / "exports").write_text("mine")
        return tmp_path / "exports", "it is not a folder"
    if how == "a looping link":
        (tmp_path / "a").symlink_to(tmp_path / "b")
        (tmp_path / "b").symlink_to(tmp_path / "a")
        return tmp_path / "a" / "exports", "too many levels of symbolic links"
    if how == "below a file":
        (tmp_path / "file").write_text("mine")
        return tmp_path / "file" / "exports", "not a directory"
    if how == "unwritable":
        return Path("/sys/stagezoo-exports"), "not permitted|permission denied|read-only"
    monkeypatch.setattr("profiling.runtimes.cache.shutil.disk_usage",
                        lambda path: shutil._ntuple_diskusage(100, 100, 0))
    return tmp_path / "exports", "its disk has 0 bytes free"


@needs_onnxruntime
@pytest.mark.parametrize("how", ["a file", "a looping link", "below a file", "unwritable",
                                 "full"])
def test_an_unusable_cache_folder_is_left_out_with_a_note(how, tmp_path, monkeypatch):
    folder, why = _unusable(how, tmp_path, monkeypatch)
    before = sorted(p.name for p in tmp_path.iterdir())
    model, x = tiny_model()
    profiled = run_cached(model, x, folder, tmp_path / "work")
    note = profiled.deployment["export_cache_note"]
    assert note.startswith(f"export cache {folder} is not usable (")
    assert re.search(why, note.lower()) and note.endswith("): exported without it")
    assert profiled.deployment["export_cache"] == "off"
    assert output_matches(profiled, model, x)
    if how != "full":
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(before + ["work"])


@needs_onnxruntime
@pytest.mark.parametrize("failing", ["copyfile", "write_text", "replace"])
def test_an_entry_that_cannot_be_written_leaves_nothing_and_the_run_goes_on(
        failing, tmp_path, monkeypatch):
    from profiling.runtimes import cache

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    target = {"copyfile": (cache.shutil, "copyfile"), "write_text": (Path, "write_text"),
              "replace": (cache.os, "replace")}[failing]
    model, x = tiny_model()
    from profiling.runtimes import profile as profile_module

    real_write = profile_module.write_entry

    def write_entry(folder, entry):
        with monkeypatch.context() as patch:
            patch.setattr(*target, full)
            return real_write(folder, entry)

    monkeypatch.setattr(profile_module, "write_entry", write_entry)
    profiled = run_cached(model, x, tmp_path / "cache", tmp_path / "work")
    assert profiled.deployment["export_cache_note"] == \
        f"export cache {tmp_path / 'cache'}: the export was not kept (No space left on device)"
    assert list((tmp_path / "cache").iterdir()) == []
    assert output_matches(profiled, model, x)


@needs_onnxruntime
@pytest.mark.slow
def test_the_command_line_says_what_was_wrong_with_the_cache_in_one_note_and_exits_0(
        tmp_path, capsys, monkeypatch):
    import tempfile

    from cli_runner import run_main
    from zoo.tools.profile import main

    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    cache = tmp_path / "xdg" / "stagezoo" / "exports"
    command = ["model=torchvision", "model.arch=resnet18", "input.size=[32,32]",
               "run.runtime=onnxruntime", "run.repeats=1"]  # the summary prints the notes
    runs = {}
    for name in ("first", "truncated", "cache is a file"):
        if name == "truncated":
            model = next(cache.iterdir()) / "model.onnx"
            model.write_bytes(model.read_bytes()[:1000])
        elif name == "cache is a file":
            shutil.rmtree(tmp_path / "xdg")
            (tmp_path / "xdg").write_text("mine")
        outcome = run_main(main, [*command, f"hydra.run.dir={tmp_path / name}"], capsys,
                           monkeypatch)
        assert outcome.code == 0, outcome
        runs[name] = [line for line in outcome.stdout.splitlines() if "export cache" in line]
        meta = json.loads((tmp_path / name / "meta.json").read_text())
        assert (tmp_path / name / "export" / "model.onnx").stat().st_size > 1000
        runs[name].append(meta["deployment"]["export_cache"])
        assert leftovers(tmp_path / "tmp") == []  # onnxruntime keeps a .ses file there
    entry = next(p for p in (tmp_path / "first" / "export").iterdir())
    assert runs["first"] == ["miss"]
    assert runs["truncated"][1:] == ["miss"] and runs["truncated"][0].startswith(
        f"note: export cache entry {cache}/") and "model.onnx has fewer bytes" in \
        runs["truncated"][0]
    assert runs["cache is a file"] == [
        f"note: export cache {cache} is not usable (Not a directory): exported without it",
        "off"]
    assert entry.name == "model.onnx"
