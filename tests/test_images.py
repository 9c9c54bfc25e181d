"""Real images as input: the conversion rule, the shipped sample, and runs on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torchvision.io as io

import zoo
from zoo.tools.job import run_profile
from zoo.tools.composition import compose_config
from zoo.inputs import (LUMA, SAMPLE_DIR, SAMPLE_FILES, convert_channels, fit_size,
                        image_inputs, resolve_image_files)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torchvision.io in 0.29


def _luma(red: float, green: float, blue: float) -> float:
    return 0.299 * red + 0.587 * green + 0.114 * blue


def _write_png(path: Path, pixels: torch.Tensor) -> Path:
    io.write_png(pixels, str(path))
    return path


def test_sample_is_small_real_and_has_the_stated_flow():
    files = sorted(p for p in SAMPLE_DIR.iterdir() if p.name != "README.md")
    assert [p.name for p in files] == ["chelsea_0.png", "chelsea_1.png", "coffee.jpg"]
    assert sum(p.stat().st_size for p in SAMPLE_DIR.iterdir()) < 1_000_000
    first = io.decode_image(io.read_file(str(SAMPLE_DIR / "chelsea_0.png")))
    second = io.decode_image(io.read_file(str(SAMPLE_DIR / "chelsea_1.png")))
    assert first.shape == second.shape == (3, 288, 440)
    # the README's flow (+4, +2): second[y, x] == first[y - 2, x - 4]
    assert torch.equal(second[:, 2:, 4:], first[:, :-2, :-4])
    assert not torch.equal(second, first)


def test_grey_to_colour_repeats_and_colour_to_grey_is_luma(tmp_path):
    grey = torch.tensor([[[0, 100], [200, 255]]], dtype=torch.uint8)
    colour = convert_channels(grey.float(), 3)
    assert colour.shape == (3, 2, 2) and all(torch.equal(c, grey[0].float()) for c in colour)
    rgb = torch.tensor([[[255.0]], [[100.0]], [[10.0]]])
    assert convert_channels(rgb, 1).item() == pytest.approx(_luma(255, 100, 10))
    assert sum(LUMA) == pytest.approx(1.0)
    assert torch.equal(convert_channels(rgb, 4).flatten(), torch.tensor([255.0, 100, 10, 255]))


def test_files_are_converted_for_a_one_channel_and_a_three_channel_model(tmp_path):
    colour = torch.zeros(3, 8, 8, dtype=torch.uint8)
    colour[0], colour[1], colour[2] = 200, 100, 50
    grey = torch.full((1, 8, 8), 128, dtype=torch.uint8)
    colour_file = _write_png(tmp_path / "a_colour.png", colour)
    _write_png(tmp_path / "b_grey.png", grey)
    gray_swiftnet = zoo.create_model("swiftnet", in_channels=1).eval()
    (batch,), notes = image_inputs(gray_swiftnet, [str(colour_file)], batch=1, size=(8, 8))
    assert batch.shape == (1, 1, 8, 8)  # SwiftNet takes [0, 255]: luma, not rescaled
    assert torch.allclose(batch, torch.full_like(batch, _luma(200, 100, 50)))
    classifier = zoo.create_model("torchvision", arch="resnet18").eval()
    (batch,), notes = image_inputs(classifier, str(tmp_path), batch=2, size=(8, 8))
    assert batch.shape == (2, 3, 8, 8)  # the folder, sorted: colour then grey
    mean, std = torch.tensor([0.485, 0.456, 0.406]), torch.tensor([0.229, 0.224, 0.225])
    expected_grey = (128 / 255 - mean) / std  # grey repeated into R, G, B, then ImageNet's
    assert torch.allclose(batch[1, :, 0, 0], expected_grey, atol=1e-6)
    expected_colour = (torch.tensor([200, 100, 50]) / 255 - mean) / std
    assert torch.allclose(batch[0, :, 0, 0], expected_colour, atol=1e-6)
    assert "a_colour.png" in notes[0] and "b_grey.png" in notes[0]
    assert notes[1].startswith("rule: 3 channel(s)") and "[0.485, 0.456, 0.406]" in notes[1]


def test_resize_covers_the_size_then_crops_the_centre():
    image = torch.arange(4 * 8, dtype=torch.float32).reshape(1, 4, 8)
    assert torch.equal(fit_size(image, (4, 4)), image[:, :, 2:6])  # no scaling, centre crop
    scaled = fit_size(torch.ones(3, 10, 20), (20, 20))  # x2 covers 20x20 (20x40), crop 20x20
    assert scaled.shape == (3, 20, 20) and torch.allclose(scaled, torch.ones(1))


def test_too_few_images_are_reused_and_bad_paths_are_one_line(tmp_path):
    one = _write_png(tmp_path / "one.png", torch.zeros(3, 4, 4, dtype=torch.uint8))
    flow = zoo.create_model("gmflow", feature_channels=16, num_transformer_layers=0)
    (first, second), notes = image_inputs(flow, [str(one)], batch=2, size=(4, 4))
    assert first.shape == second.shape == (2, 3, 4, 4)
    assert "4 frame(s) for 2 image_pair item(s) (the 1 frame(s) reused in order)" in notes[0]
    with pytest.raises(zoo.ConfigError, match="no file or folder .*missing.png"):
        resolve_image_files([str(tmp_path / "missing.png")], "image")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(zoo.ConfigError, match="holds no image or video file"):
        resolve_image_files(str(empty), "image")
    with pytest.raises(zoo.ConfigError, match="cannot read video|cannot decode"):
        (tmp_path / "clip.mp4").write_bytes(b"not a video")
        image_inputs(flow, [str(tmp_path / "clip.mp4")], batch=1, size=(4, 4))


def test_an_animated_gif_is_a_sequence_of_frames(tmp_path):
    from PIL import Image

    frames = [Image.new("RGB", (16, 12), (40 * i, 0, 0)) for i in range(3)]
    path = tmp_path / "clip.gif"
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=40, loop=0)
    video = zoo.create_model("torchvision", arch="r3d_18")
    (clip,), notes = image_inputs(video, [str(path)], batch=1, size=(12, 16), frames=3)
    assert clip.shape == (1, 3, 3, 12, 16)
    mean, std = video.input_mean[0], video.input_std[0]
    reds = clip[0, 0, :, 0, 0] * std + mean
    assert torch.allclose(reds, torch.tensor([0.0, 40, 80]) / 255, atol=1e-6)
    assert "clip.gif#0" in notes[0] and "clip.gif#2" in notes[0]


@pytest.mark.parametrize("name, options, kind, shapes", [
    ("gmflow", ["model.feature_channels=16", "model.num_transformer_layers=1"], "image_pair",
     {"in": "[1, 3, 64, 96]"}),
    ("faster_rcnn", ["model.min_size=64", "model.max_size=96"], "image", {"in": "[1, 3, 64, 96]"}),
    ("swiftnet", [], "image", {"in": "[1, 3, 64, 96]"}),
])
def test_sample_runs_for_flow_detection_and_segmentation(tmp_path, name, options, kind, shapes):
    cfg = compose_config([f"model={name}", *options, "device=meta", "input.images=sample",
                          "input.size=[64,96]", "summary=false"])
    run = run_profile(cfg, tmp_path / "run", print_summary=False)
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    notes = " ".join(meta["notes"])
    for file in SAMPLE_FILES[kind]:
        assert f"sample/{file}" in notes
    assert "rule: 3 channel(s)" in notes
    first = run.result.stages.iloc[0]
    assert shapes["in"] in first["in_shapes"]
    if kind == "image_pair":  # two image batches [1, 3, 64, 96] in, a flow [1, 2, 64, 96] out
        assert first["in_shapes"].count("[1, 3, 64, 96]") == 2
        stages = run.result.stages  # the last top-level stage, not the 'other' row after it
        last = stages[(stages.depth == 0) & (stages.kind == "stage")].iloc[-1]
        assert "[1, 2, 64, 96]" in last["out_shapes"]


def test_sample_values_reach_the_model_in_its_range():
    flow = zoo.create_model("gmflow", feature_channels=16, num_transformer_layers=0)
    (first, second), _ = image_inputs(flow, "sample", batch=1, size=(288, 440))
    expected = io.decode_image(io.read_file(str(SAMPLE_DIR / "chelsea_0.png"))).float()
    assert torch.equal(first[0], expected)  # 0..255, unscaled, at the files' own size
    assert float(second.max()) > 1.0


def test_timm_models_normalise_with_their_pretrained_config(tmp_path):
    colour = torch.zeros(3, 4, 4, dtype=torch.uint8)
    colour[0], colour[1], colour[2] = 255, 100, 10
    path = _write_png(tmp_path / "colour.png", colour)
    vit = zoo.create_model("timm", arch="vit_tiny_patch16_224", arch_options={"img_size": 32})
    assert (vit.input_mean, vit.input_std) == ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
    (batch,), _ = image_inputs(vit, [str(path)], batch=1, size=(32, 32))
    assert torch.allclose(batch[0, :, 0, 0], (torch.tensor([255, 100, 10]) / 255 - 0.5) / 0.5)
    grey = zoo.create_model("timm", arch="resnet18", in_channels=1)
    (batch,), _ = image_inputs(grey, [str(path)], batch=1, size=(4, 4))
    expected = (_luma(255, 100, 10) / 255 - _luma(0.485, 0.456, 0.406)) / \
        _luma(0.229, 0.224, 0.225)  # a 1-channel model: the luma of ImageNet's mean and std
    assert batch.shape == (1, 1, 4, 4) and torch.allclose(batch, torch.tensor(expected), atol=1e-6)
