"""The runtimes' export cache (profiling.runtimes.cache, export_key, workdir): keyed by
everything that decides the graph, checked when read, never a reason for a run to fail or
hang, and nothing left behind by a killed run.

The entries are made from tiny models (an export takes a second); the tests that run a
runtime skip without the ``runtimes`` extra."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from profiling import stage
from profiling.runtimes import missing_packages
from profiling.runtimes.cache import MANIFEST, entry_limit, export_key, read_entry
from profiling.runtimes.workdir import DiskFull

needs_onnxruntime = pytest.mark.skipif(bool(missing_packages("onnxruntime", "int8")),
                                       reason="the runtimes extra is not installed")
ROOT = Path(__file__).resolve().parents[1]
ATTACH = {"encoder": "encoder", "head": "head"}


class Scaled(nn.Module):
    """An encoder, a code stage scaling by ``factor`` (a plain attribute, not in ``repr``
    nor in the weights) and a head."""

    def __init__(self, factor: float = 2.0) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(4, 2, 1)
        self.factor = factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.encoder(x)
        with stage("scale", x) as s:
            x = s.output(x * self.factor)
        return self.head(x)


class Branching(Scaled):
    """``Scaled`` whose code stage branches on a value: it exports in two parts."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.encoder(x)
        with stage("scale", x) as s:
            x = s.output(x * self.factor if float(x.detach().mean()) > -1e9 else x)
        return self.head(x)


def _model(kind: type = Scaled, **options) -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return kind(**options).eval(), torch.randn(1, 3, 8, 8)


def _run(model, x, cache, workdir, **options):
    from profiling.runtimes import profile_runtime

    return profile_runtime(model, (x,), runtime="onnxruntime", warmup=0, repeats=1,
                           attach=ATTACH, workdir=workdir, cache_folder=cache, **options)


def _output_matches(profiled, model, x) -> bool:
    return np.allclose(profiled.outputs[0], model(x).detach().numpy(), atol=1e-5)


def _leftovers(*folders: Path) -> list[str]:
    return [p.name for f in folders if f.is_dir() for p in f.iterdir()
            if p.name.startswith((".incoming-", "stagezoo-export-"))]


# ---------------------------------------------------------------- the key


def _changed(value):
    """A value of the same kind that differs from ``value``."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "_other"
    if isinstance(value, (list, tuple)):
        return [*value, value[0] if value else 1]
    if isinstance(value, dict):
        return {**value, "other": 1}
    return 1  # None


def _all_models() -> list[str]:
    import zoo

    return zoo.list_models()


@pytest.mark.parametrize("name", _all_models())
def test_every_model_option_changes_the_export_key(name):
    import zoo
    from omegaconf import OmegaConf
    from zoo.runtime import export_identity
    from zoo.tools.composition import compose_config

    model, x = _model()
    composed = compose_config([f"model={name}"])
    key = export_key(model, (x,), identity=export_identity(composed))
    options = zoo.model_options(name)
    assert len(options) >= 8  # its own and the common ones (stage_depth, checkpoint, ...)
    for option in options:
        assert option in composed.model, option
        changed = OmegaConf.to_container(composed, resolve=True)
        changed["model"][option] = _changed(changed["model"][option])
        other = export_key(model, (x,), identity=export_identity(OmegaConf.create(changed)))
        assert other != key, f"model={name}: model.{option} does not change the key"


@pytest.mark.parametrize("name", ["torchvision", "timm"])
def test_each_arch_options_entry_changes_the_export_key(name):
    from omegaconf import OmegaConf
    from zoo.runtime import export_identity
    from zoo.tools.composition import compose_config

    model, x = _model()
    composed = OmegaConf.to_container(compose_config([f"model={name}"]), resolve=True)
    keys = set()
    for arch_options in (None, {"transform_input": True}, {"transform_input": False},
                         {"transform_input": False, "aux_logits": False}):
        composed["model"]["arch_options"] = arch_options
        keys.add(export_key(model, (x,), identity=export_identity(OmegaConf.create(composed))))
    assert len(keys) == 4


@pytest.mark.parametrize("option, value", [
    ("attn_splits_list", [1]), ("corr_radius_list", [4]), ("prop_radius_list", [1]),
    ("pred_bidir_flow", True), ("attention_impl", "math"), ("position_encoding", "none"),
    ("attention_type", "full")])
def test_a_setting_that_a_module_keeps_changes_the_key_without_the_options(option, value):
    """The library's own key sees GMFlow's forward options (plain attributes of its modules)
    where no caller passes the options: the same weights, another graph."""
    import zoo
    from profiling.runtimes.cache_key import module_settings

    torch.manual_seed(0)
    default = zoo.create_model("gmflow", feature_channels=16, num_transformer_layers=1)
    torch.manual_seed(0)
    other = zoo.create_model("gmflow", feature_channels=16, num_transformer_layers=1,
                             **{option: value})
    inputs = (torch.zeros(1, 3, 32, 32), torch.zeros(1, 3, 32, 32))
    if set(other.state_dict()) == set(default.state_dict()):
        other.load_state_dict(default.state_dict())
    assert module_settings(default) != module_settings(other)
    assert export_key(default, inputs) != export_key(other, inputs)


def test_the_exporter_versions_code_and_opset_and_the_models_source_are_in_the_key(
        monkeypatch, tmp_path):
    from profiling.runtimes import cache_key as keys

    model, x = _model()
    key = export_key(model, (x,))
    assert export_key(model, (x,)) == key  # the same model and inputs: the same key
    assert export_key(model, (x,), opset=17) != key
    for package in ("torch", "onnx", "onnxscript", "onnx-ir"):
        versions = {**keys.exporter_versions(), package: "0.0.1"}
        monkeypatch.setattr(keys, "exporter_versions", lambda versions=versions: versions)
        assert export_key(model, (x,)) != key, package
        monkeypatch.undo()
    monkeypatch.setattr(keys, "_file_digest", lambda path: "edited")  # any source edited
    assert export_key(model, (x,)) != key
    monkeypatch.undo()
    assert export_key(model, (x.double(),)) != key  # dtype of an input
    assert export_key(model, (x,), identity={"model": {"arch": "resnet18"}}) != key


def test_the_sources_in_the_key_are_the_model_classes_files():
    from profiling.runtimes.cache_key import _source_digests

    model, _ = _model()
    sources = {Path(path).name: digest for path, digest in _source_digests(model).items()}
    assert set(sources) == {"test_export_cache.py", "container.py", "conv.py",
                            "activation.py"}
    here = Path(__file__).read_bytes()
    assert sources["test_export_cache.py"] == hashlib.sha256(here).hexdigest()


@needs_onnxruntime
@pytest.mark.parametrize("change", ["factor", "weights", "input"])
def test_a_changed_model_is_exported_again_not_taken_from_the_cache(change, tmp_path):
    model, x = _model()
    first = _run(model, x, tmp_path / "cache", tmp_path / "a")
    if change == "factor":  # a plain setting: no change in repr or weights
        model.factor = 3.0
    elif change == "weights":
        with torch.no_grad():
            model.head.bias += 1
    else:
        x = torch.randn(1, 3, 8, 12)
    again = _run(model, x, tmp_path / "cache", tmp_path / "b")
    assert (first.deployment["export_cache"], again.deployment["export_cache"]) == \
        ("miss", "miss")
    assert _output_matches(again, model, x)
    assert len(list((tmp_path / "cache").iterdir())) == 2


@needs_onnxruntime
def test_int8_is_quantised_at_every_run_from_the_float32_export_an_entry_holds(tmp_path):
    """Why the run's dtype and the quantiser's settings are not in the key: an entry holds
    the float32 export only, and int8 taken from the cache is int8 without it."""
    model, x = _model()
    _run(model, x, tmp_path / "cache", tmp_path / "a")
    cached = _run(model, x, tmp_path / "cache", tmp_path / "b", dtype="int8")
    fresh = _run(model, x, None, tmp_path / "c", dtype="int8")
    assert (cached.deployment["export_cache"], fresh.deployment["export_cache"]) == \
        ("hit", "off")
    assert np.array_equal(cached.outputs[0], fresh.outputs[0])
    names = {p.name for p in next((tmp_path / "cache").iterdir()).iterdir()}
    assert names == {"model.onnx", "model.stages.json", MANIFEST}


class Selecting(nn.Module):
    """A branch on a value (the whole model does not export) and a head that gets the rows
    whose first feature is positive: how many depends on the input's values."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Linear(4, 4)
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.encoder(x)
        if float(x.detach().mean()) > -1e9:
            x = x[x[:, 0] > 0]
        return self.head(x)


@needs_onnxruntime
def test_parts_whose_inputs_follow_the_values_are_exported_again_for_other_values(tmp_path):
    """Faster R-CNN's box head gets as many proposals as the scores let through: its part
    was exported for that many, and the same input shape with other values must not reuse
    it (ONNX Runtime refused the other count)."""
    from profiling.runtimes import profile_runtime

    torch.manual_seed(0)
    model, states, notes = Selecting().eval(), [], []
    for index, seed in enumerate((0, 0, 1, 1)):
        x = torch.randn(16, 4, generator=torch.Generator().manual_seed(seed))
        rows = int((model.encoder(x)[:, 0] > 0).sum())
        profiled = profile_runtime(model, (x,), runtime="onnxruntime", warmup=0, repeats=1,
                                   workdir=tmp_path / f"w{index}", cache_folder=tmp_path / "c",
                                   attach={"encoder": "encoder", "head": "head"})
        assert profiled.outputs[0].shape == (rows, 2)
        assert _output_matches(profiled, model, x)
        states.append(profiled.deployment["export_cache"])
        notes.append(profiled.deployment.get("export_cache_note"))
    assert states == ["miss", "hit", "miss", "hit"]
    assert notes[:2] == [None, None] and notes[3] is None
    assert "part head was exported for inputs tensor(9, 4):torch.float32:cpu and gets " \
           "tensor(13, 4):torch.float32:cpu in this run" in notes[2]


# ---------------------------------------------------------------- entries checked when read


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A cache with the whole export of ``Scaled`` and the parts of ``Branching``."""
    if missing_packages("onnxruntime", "int8"):
        pytest.skip("the runtimes extra is not installed")
    folder = tmp_path_factory.mktemp("pristine")
    entries = {}
    for kind in (Scaled, Branching):
        model, x = _model(kind)
        _run(model, x, folder / "cache", folder / kind.__name__)
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
    "another model's onnx", "no manifest (an entry of the old format)",
    "another entry's manifest", "bit flipped"])
def test_a_corrupt_entry_is_exported_again_with_a_note_naming_the_cache(how, pristine,
                                                                        tmp_path):
    source, keys = pristine
    cache = tmp_path / "cache"
    shutil.copytree(source, cache, symlinks=True)
    entry = cache / keys[Scaled]
    why = _corrupt(how, entry, cache / keys[Branching])
    model, x = _model()
    profiled = _run(model, x, cache, tmp_path / "work")
    note = profiled.deployment["export_cache_note"]
    assert note.startswith(f"export cache entry {entry} was unusable (") and why in note, note
    assert note.endswith("): exported again") and "\n" not in note
    assert profiled.deployment["export_cache"] == "miss"
    assert profiled.result.stages["engine"].iloc[0] == "onnxruntime"  # not a PyTorch hybrid
    assert _output_matches(profiled, model, x)
    assert read_entry(entry, tmp_path / "check", entry_limit(model)).whole is not None  # sound
    assert _leftovers(cache) == []


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
    model, x = _model(Branching)
    profiled = _run(model, x, cache, tmp_path / "work")
    assert why in profiled.deployment["export_cache_note"]
    assert set(profiled.deployment["parts"]) == {"encoder", "head"}
    assert _output_matches(profiled, model, x)
    assert _leftovers(cache) == []


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
    model, x = _model()
    started = time.perf_counter()
    profiled = _run(model, x, cache, tmp_path / "work")
    assert time.perf_counter() - started < 30
    assert why in profiled.deployment["export_cache_note"], profiled.deployment
    assert _output_matches(profiled, model, x)
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
    model, x = _model(Branching)
    profiled = _run(model, x, cache, tmp_path / "work")
    assert why in profiled.deployment["export_cache_note"]
    assert set(profiled.deployment["parts"]) == {"encoder", "head"}
    assert _output_matches(profiled, model, x)
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
    model, x = _model()
    profiled = _run(model, x, folder, tmp_path / "work")
    note = profiled.deployment["export_cache_note"]
    assert note.startswith(f"export cache {folder} is not usable (")
    assert re.search(why, note.lower()) and note.endswith("): exported without it")
    assert profiled.deployment["export_cache"] == "off"
    assert _output_matches(profiled, model, x)
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
    model, x = _model()
    from profiling.runtimes import profile as profile_module

    real_write = profile_module.write_entry

    def write_entry(folder, entry):
        with monkeypatch.context() as patch:
            patch.setattr(*target, full)
            return real_write(folder, entry)

    monkeypatch.setattr(profile_module, "write_entry", write_entry)
    profiled = _run(model, x, tmp_path / "cache", tmp_path / "work")
    assert profiled.deployment["export_cache_note"] == \
        f"export cache {tmp_path / 'cache'}: the export was not kept (No space left on device)"
    assert list((tmp_path / "cache").iterdir()) == []
    assert _output_matches(profiled, model, x)


# ---------------------------------------------------------------- a full temporary disk


def _disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device", "/tmp/stagezoo-export-1-x/m.onnx")


@needs_onnxruntime
@pytest.mark.parametrize("where", ["the whole export", "a part's export", "the quantiser",
                                   "a wrapped message", "the copy of a cached entry"])
def test_a_full_temporary_disk_is_a_failure_naming_the_disk(where, tmp_path, monkeypatch):
    from profiling.runtimes import cache, export, profile

    kind, dtype, cached = Scaled, "float32", None
    if where == "the whole export":
        monkeypatch.setattr(profile, "export_onnx", _disk_full)
    elif where == "a part's export":
        kind = Branching
        monkeypatch.setattr(export.ExportedModel, "save_map", _disk_full)
    elif where == "the quantiser":
        dtype = "int8"
        monkeypatch.setattr("profiling.runtimes.quantize.quantize_onnxruntime", _disk_full)
    elif where == "a wrapped message":
        def wrapped(*args, **kwargs):
            raise RuntimeError("failed to save: [Errno 28] No space left on device")
        monkeypatch.setattr(profile, "export_onnx", wrapped)
    else:
        cached = tmp_path / "cache"
        _run(*_model(), cached, tmp_path / "first")
        monkeypatch.setattr(cache, "open", _disk_full, raising=False)
    model, x = _model(kind)
    with pytest.raises(DiskFull) as caught:
        _run(model, x, cached, tmp_path / "work", dtype=dtype)
    assert caught.value.errno == errno.ENOSPC
    assert "no space left on the disk mounted at /" in caught.value.strerror
    assert "(ENOSPC)" in caught.value.strerror and "TMPDIR" in caught.value.strerror


@needs_onnxruntime
def test_a_full_temporary_disk_exits_1_with_one_line_and_leaves_nothing(tmp_path, capsys,
                                                                        monkeypatch):
    import tempfile

    from cli_runner import run_main
    from zoo.tools.profile import main

    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr("profiling.runtimes.profile.export_onnx", _disk_full)
    outcome = run_main(main, ["model=torchvision", "model.arch=resnet18", "input.size=[32,32]",
                              "run.runtime=onnxruntime", "run.repeats=1", "summary=false",
                              f"hydra.run.dir={tmp_path / 'run'}"], capsys, monkeypatch)
    assert outcome.code == 1, outcome
    assert "no space left on the disk mounted at /" in outcome.line
    assert "ENOSPC" in outcome.line and "runs no part" not in outcome.line
    assert not (tmp_path / "run").exists()
    assert _leftovers(tmp_path / "tmp") == []  # onnxruntime keeps a .ses file there
    assert list((tmp_path / "xdg" / "stagezoo" / "exports").iterdir()) == []


# ---------------------------------------------------------------- what killed runs leave


def _dead_pid() -> int:
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def test_folders_of_killed_runs_are_reclaimed_and_others_kept(tmp_path):
    from profiling.runtimes.cache import usable_cache
    from profiling.runtimes.workdir import make_workdir

    dead, mine = _dead_pid(), os.getpid()
    alive = subprocess.Popen(["sleep", "60"])
    try:
        hour_ago = time.time() - 3600 - 60
        names = {f"stagezoo-export-{dead}-a": None, f"stagezoo-export-{mine}-b": None,
                 f"stagezoo-export-{alive.pid}-reused": hour_ago,
                 f"stagezoo-export-{alive.pid}-fresh": None, "stagezoo-export-x-c": None}
        cache = tmp_path / "cache"
        names.update({f"cache/.incoming-{dead}-d": None, f"cache/.incoming-{mine}-old": hour_ago,
                      f"cache/.incoming-{mine}-new": None})
        for name, changed in names.items():
            (tmp_path / name).mkdir(parents=True)
            (tmp_path / name / "model.onnx").write_text("partial")
            if changed is not None:
                os.utime(tmp_path / name, (changed, changed))
        (tmp_path / f"stagezoo-export-{dead}-file").write_text("not a folder")
        made = make_workdir(tmp_path)
        assert usable_cache(cache, 0) == (cache, None)
    finally:
        alive.kill()
        alive.wait()
    assert made.name.startswith(f"stagezoo-export-{mine}-")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([
        "cache", made.name, f"stagezoo-export-{mine}-b", f"stagezoo-export-{alive.pid}-fresh",
        "stagezoo-export-x-c", f"stagezoo-export-{dead}-file"])
    assert [p.name for p in cache.iterdir()] == [f".incoming-{mine}-new"]


def test_a_killed_run_leaves_folders_that_the_next_run_reclaims(tmp_path):
    script = ("import os, signal, sys\n"
              "from pathlib import Path\n"
              "from profiling.runtimes.workdir import make_staging, make_workdir\n"
              "work = make_workdir(Path(sys.argv[1]))\n"
              "(work / 'model.onnx').write_bytes(b'half')\n"
              "(Path(sys.argv[1]) / 'cache').mkdir()\n"
              "make_staging(Path(sys.argv[1]) / 'cache')\n"
              "os.kill(os.getpid(), signal.SIGKILL)\n")
    killed = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert killed.returncode == -signal.SIGKILL
    assert len(_leftovers(tmp_path, tmp_path / "cache")) == 2
    from profiling.runtimes.cache import usable_cache
    from profiling.runtimes.workdir import make_workdir

    made = make_workdir(tmp_path)
    usable_cache(tmp_path / "cache", 0)
    assert _leftovers(tmp_path, tmp_path / "cache") == [made.name]


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
        assert _leftovers(tmp_path / "tmp") == []  # onnxruntime keeps a .ses file there
    entry = next(p for p in (tmp_path / "first" / "export").iterdir())
    assert runs["first"] == ["miss"]
    assert runs["truncated"][1:] == ["miss"] and runs["truncated"][0].startswith(
        f"note: export cache entry {cache}/") and "model.onnx has fewer bytes" in \
        runs["truncated"][0]
    assert runs["cache is a file"] == [
        f"note: export cache {cache} is not usable (Not a directory): exported without it",
        "off"]
    assert entry.name == "model.onnx"
