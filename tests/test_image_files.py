"""Image files of every bit depth, broken files and decompression bombs (issue 23, section 4):
16-bit PNG and TIFF give their 8-bit twin's tensor, a file that cannot be read gets one line
naming it (exit 2), and a huge declared image is refused from its header."""

from __future__ import annotations

import struct
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import zoo
from cli_runner import run_main
from zoo.options import ConfigError
from zoo.inputs import declared_pixels, image_inputs, read_frames
from zoo.profile import main as profile_main

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torchvision.io in 0.29

#: 8-bit colour and grey pixels, and their 16-bit twins (v * 257 maps 0..255 onto 0..65535)
RGB8 = np.random.default_rng(0).integers(0, 256, (6, 8, 3), dtype=np.uint8)
GREY8 = RGB8[:, :, 0].copy()


def _png16(path: Path, pixels: np.ndarray) -> Path:
    """A 16-bit PNG (grey or RGB), written chunk by chunk: Pillow cannot write 48-bit RGB."""
    height, width = pixels.shape[:2]
    colour = 2 if pixels.ndim == 3 else 0
    rows = pixels.astype(">u2").reshape(height, -1).tobytes()
    stride = len(rows) // height
    raw = b"".join(b"\0" + rows[i * stride:(i + 1) * stride] for i in range(height))
    return _png(path, width, height, 16, colour, zlib.compress(raw))


def _saved(path: Path, pixels: np.ndarray) -> Path:
    Image.fromarray(pixels).save(path)
    return path


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(
        ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def _png(path: Path, width: int, height: int, depth: int, colour: int, idat: bytes) -> Path:
    header = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", idat)
                     + _chunk(b"IEND", b""))
    return path


def _tiff(path: Path, pixels: np.ndarray, width: int = 0, height: int = 0) -> Path:
    """An uncompressed little-endian TIFF of ``pixels`` (8 or 16 bits, grey or RGB); ``width``
    and ``height`` override the declared size (for a bomb)."""
    rows, columns = pixels.shape[:2]
    samples = 3 if pixels.ndim == 3 else 1
    bits = pixels.dtype.itemsize * 8
    data = pixels.astype(pixels.dtype.newbyteorder("<")).tobytes()
    entries = [(256, 4, 1, width or columns), (257, 4, 1, height or rows),
               (258, 3, 1, bits) if samples == 1 else (258, 3, 3, 0),
               (259, 3, 1, 1), (262, 3, 1, 2 if samples == 3 else 1), (273, 4, 1, 0),
               (277, 3, 1, samples), (278, 4, 1, height or rows), (279, 4, 1, len(data))]
    ifd_size = 2 + 12 * len(entries) + 4
    bits_offset = 8 + ifd_size
    data_offset = bits_offset + (6 if samples == 3 else 0)
    body = struct.pack("<H", len(entries))
    for tag, kind, count, value in entries:
        value = {273: data_offset, 258: value if samples == 1 else bits_offset}.get(tag, value)
        packed = struct.pack("<HH", value, 0) if kind == 3 and count == 1 else \
            struct.pack("<I", value)
        body += struct.pack("<HHI", tag, kind, count) + packed
    extra = struct.pack("<HHH", bits, bits, bits) if samples == 3 else b""
    path.write_bytes(b"II*\0" + struct.pack("<I", 8) + body + b"\0\0\0\0" + extra + data)
    return path


@pytest.mark.parametrize("make_16, make_8", [
    (lambda p: _png16(p / "a.png", GREY8.astype(np.uint16) * 257),
     lambda p: _saved(p / "b.png", GREY8)),
    (lambda p: _png16(p / "a.png", RGB8.astype(np.uint16) * 257),
     lambda p: _saved(p / "b.png", RGB8)),
    (lambda p: _tiff(p / "a.tif", GREY8.astype(np.uint16) * 257),
     lambda p: _tiff(p / "b.tif", GREY8)),
    (lambda p: _tiff(p / "a.tiff", RGB8.astype(np.uint16) * 257),
     lambda p: _tiff(p / "b.tiff", RGB8)),
], ids=["png-grey", "png-rgb", "tiff-grey", "tiff-rgb"])
def test_a_16_bit_image_gives_its_8_bit_twins_values(tmp_path, make_16, make_8):
    (sixteen,), (eight,) = read_frames(make_16(tmp_path)), read_frames(make_8(tmp_path))
    assert eight.pixels.dtype == torch.float32 and eight.pixels.max() > 200
    assert sixteen.pixels.shape == eight.pixels.shape
    assert (sixteen.pixels - eight.pixels).abs().max() < 1e-3  # exact twins: v16 = 257 v8


def test_16_bit_values_that_are_not_exact_twins_stay_within_one_level(tmp_path):
    """A 16-bit colour PNG is read at 8 bits by Pillow (its high byte): within one level."""
    values = np.random.default_rng(1).integers(0, 65536, (6, 8, 3), dtype=np.uint16)
    twin = np.round(values / 257).astype(np.uint8)
    Image.fromarray(twin).save(tmp_path / "eight.png")
    model = zoo.create_model("timm", arch="resnet18", num_classes=3)
    inputs = [image_inputs(model, [str(path)], batch=1, size=(6, 8))[0][0]
              for path in (_png16(tmp_path / "sixteen.png", values), tmp_path / "eight.png")]
    # [0, 1] then ImageNet's std (0.224 at the smallest): one level is 1/255/0.224
    assert (inputs[0] - inputs[1]).abs().max() <= 1 / 255 / 0.224 + 1e-6


def _written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _truncated(path: Path) -> Path:
    Image.fromarray(RGB8).save(path)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return path


BROKEN = {
    "truncated png": lambda p: _truncated(p / "cut.png"),
    "truncated jpeg": lambda p: _truncated(p / "cut.jpg"),
    "truncated gif": lambda p: _truncated(p / "cut.gif"),
    "truncated tiff": lambda p: _truncated(p / "cut.tif"),
    "empty file": lambda p: _written(p / "empty.png", b""),
    "text named png": lambda p: _written(p / "notes.png", b"hello"),
    "zip named jpg": lambda p: _written(p / "a.jpg", b"PK\x03\x04" + bytes(64)),
    "png with bad data": lambda p: _png(p / "bad.png", 8, 6, 8, 2, b"not zlib data"),
    "png named webp": lambda p: _png(p / "x.webp", 8, 6, 8, 2, b"x"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_file_is_one_line_naming_it(tmp_path, case):
    path = BROKEN[case](tmp_path)
    with pytest.raises(ConfigError) as error:
        read_frames(path)
    message = str(error.value)
    assert str(path) in message and "\n" not in message and "/__w/" not in message


#: small files that declare 60000 x 50000 pixels (3e9): decoding them would need 9 GB
BOMBS = {
    "png": lambda p: _png(p / "bomb.png", 60000, 50000, 8, 2, zlib.compress(bytes(1000))),
    "tiff": lambda p: _tiff(p / "bomb.tif", GREY8, width=60000, height=50000),
    "gif": lambda p: _gif_bomb(p / "bomb.gif"),
    "jpeg": lambda p: _jpeg_bomb(p / "bomb.jpg"),
}


def _gif_bomb(path: Path) -> Path:
    Image.fromarray(GREY8).save(path)
    data = bytearray(path.read_bytes())
    data[6:10] = struct.pack("<HH", 60000, 50000)  # the logical screen
    path.write_bytes(bytes(data))
    return path


def _jpeg_bomb(path: Path) -> Path:
    Image.fromarray(RGB8).save(path)
    data = bytearray(path.read_bytes())
    sof = data.index(b"\xff\xc0")
    data[sof + 5:sof + 9] = struct.pack(">HH", 50000, 60000)  # height, width
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("kind", list(BOMBS))
def test_a_decompression_bomb_is_refused_from_its_header(tmp_path, kind):
    path = BOMBS[kind](tmp_path)
    assert path.stat().st_size < 10_000
    assert declared_pixels(path)[:2] == (60000, 50000)
    started = time.perf_counter()
    with pytest.raises(ConfigError, match=r"declares 60000×50000 = 3,000,000,000 pixels, over "
                                          r"input.max_pixels=100,000,000"):
        read_frames(path)
    assert time.perf_counter() - started < 1.0


def test_the_pixel_limit_is_an_option(tmp_path):
    path = tmp_path / "small.png"
    Image.fromarray(RGB8).save(path)
    assert len(read_frames(path, max_pixels=48)) == 1
    with pytest.raises(ConfigError, match=r"declares 8×6 = 48 pixels, over input.max_pixels=47"):
        read_frames(path, max_pixels=47)


@pytest.mark.parametrize("make", [BOMBS["png"], BROKEN["truncated jpeg"],
                                  BROKEN["text named png"]], ids=["bomb", "truncated", "text"])
def test_the_command_line_refuses_a_bomb_or_a_broken_file_with_exit_2(tmp_path, capsys,
                                                                      monkeypatch, make):
    path = make(tmp_path)
    outcome = run_main(profile_main, [
        "model=torchvision", "model.arch=resnet18", "device=meta", f"input.images={path}",
        f"hydra.run.dir={tmp_path / 'run'}"], capsys, monkeypatch)
    assert outcome.code == 2
    assert outcome.line.startswith("error: input.images: ") and str(path) in outcome.line
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("value", ["0", "-5", "many", "1.5"])
def test_the_pixel_limit_takes_a_positive_integer(capsys, monkeypatch, value):
    outcome = run_main(profile_main, ["model=torchvision", "model.arch=resnet18", "device=meta",
                                      f"input.max_pixels={value}"], capsys, monkeypatch)
    assert outcome.code == 2 and outcome.line.startswith("error: input.max_pixels=")
    assert outcome.line.endswith("accepted: an integer >= 1")


@pytest.mark.parametrize("images", ["", [], 5, 2.5, [""], "EMPTY_FOLDER", "TEXT_FOLDER"])
def test_images_that_name_no_image_are_refused_never_replaced_by_random_inputs(tmp_path,
                                                                               images):
    (tmp_path / "empty").mkdir()
    (tmp_path / "texts").mkdir()
    (tmp_path / "texts" / "readme.txt").write_text("no image here")
    folders = {"EMPTY_FOLDER": str(tmp_path / "empty"), "TEXT_FOLDER": str(tmp_path / "texts")}
    images = folders.get(images, images) if isinstance(images, str) else images
    model = zoo.create_model("timm", arch="resnet18", num_classes=3)
    with pytest.raises(ConfigError, match=r"^input.images"):
        image_inputs(model, images, batch=1, size=(8, 8))


@pytest.mark.parametrize("images", ["''", "[]", "5"])
def test_the_job_refuses_an_empty_images_value(images):
    from zoo.tools.composition import compose_config
    from zoo.tools.job_inputs import make_inputs

    cfg = compose_config(["model=torchvision", "model.arch=resnet18", "device=meta"])
    cfg.input.images = {"''": "", "[]": [], "5": 5}[images]
    model = zoo.create_model("torchvision", arch="resnet18")
    with pytest.raises(ConfigError, match="input.images"):
        make_inputs(cfg, model, "cpu")
