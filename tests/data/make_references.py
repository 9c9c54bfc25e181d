"""Remake the compact equivalence references in ``tests/data`` from the official code.

Usage, from the repository root, with the official sources exported outside the repository
(``git archive COMMIT | tar -x -C DIR``) or checked out::

    python tests/data/make_references.py --gmflow /tmp/gmflow --swiftnet /tmp/swiftnet \\
        [--gmflow-commit SHA] [--swiftnet-commit SHA]

The commits default to ``git rev-parse HEAD`` in each folder (an export has none, so give
them). Each official model gets the weights of ``tests/reference_weights.py`` under its own
parameter names and runs, in float32 on the CPU in eval mode, on seeded inputs; each file keeps
the inputs, the outputs, the official parameter names and shapes, the options and the commit,
and nothing that needs pickle (``torch.load(..., weights_only=True)`` reads it).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import types
from pathlib import Path

import torch

DATA_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(DATA_DIR.parent))
from reference_weights import fill_reference_weights_  # noqa: E402

GMFLOW_SIZE = (64, 96)
SWIFTNET_SIZE = (64, 128)
GMFLOW_MODELS = {
    "gmflow": (dict(num_scales=1, upsample_factor=8),
               dict(attn_splits_list=[2], corr_radius_list=[-1], prop_radius_list=[-1])),
    "gmflow_refine": (dict(num_scales=2, upsample_factor=4),
                      dict(attn_splits_list=[2, 8], corr_radius_list=[-1, 4],
                           prop_radius_list=[-1, 1])),
}


def seeded_images(count: int, size: tuple[int, int], seed: int) -> list[torch.Tensor]:
    """``count`` images ``[1, 3, H, W]`` with values uniform in 0..255."""
    generator = torch.Generator().manual_seed(seed)
    return [torch.rand(1, 3, *size, generator=generator) * 255 for _ in range(count)]


def official_entries(model: torch.nn.Module) -> dict[str, list[int]]:
    """The official ``state_dict``'s names and shapes (what our model must reproduce)."""
    return {name: list(value.shape) for name, value in model.state_dict().items()}


def commit_of(path: Path, given: str | None) -> str:
    """The official commit: ``given``, or the folder's ``HEAD``; an error when neither."""
    if given:
        return given
    found = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True,
                           text=True)
    if found.returncode != 0:
        raise SystemExit(f"{path} is not a git checkout; give its commit with --*-commit")
    return found.stdout.strip()


def import_from(root: Path, module: str) -> types.ModuleType:
    """Import ``module`` from the official source folder ``root``."""
    sys.path.insert(0, str(root))
    try:
        return __import__(module, fromlist=["_"])
    finally:
        sys.path.remove(str(root))


def make_gmflow(root: Path, commit: str) -> None:
    """One file per GMFlow model: flows of both directions on one seeded pair."""
    official = import_from(root, "gmflow.gmflow")
    img0, img1 = seeded_images(2, GMFLOW_SIZE, seed=0)
    for name, (model_kwargs, forward_kwargs) in GMFLOW_MODELS.items():
        torch.manual_seed(0)
        model = official.GMFlow(feature_channels=128, attention_type="swin",
                                num_transformer_layers=6, ffn_dim_expansion=4, num_head=1,
                                **model_kwargs).eval()
        fill_reference_weights_(model)
        with torch.no_grad():
            flows = model(img0.clone(), img1.clone(), **forward_kwargs)["flow_preds"]
            bidir = model(img0.clone(), img1.clone(), pred_bidir_flow=True,
                          **forward_kwargs)["flow_preds"]
        save(f"{name}_{GMFLOW_SIZE[0]}x{GMFLOW_SIZE[1]}.pt", dict(
            official_repository="haofeixu/gmflow", official_commit=commit,
            model_kwargs=model_kwargs, forward_kwargs=forward_kwargs,
            official_entries=official_entries(model), img0=img0, img1=img1,
            flow_preds=list(flows), flow_preds_bidir=list(bidir)))


def make_swiftnet(root: Path, commit: str) -> None:
    """SwiftNet-RN18 (single scale, 19 classes) logits on one seeded image."""
    # The official ResNet imports a timer from its evaluation package, which needs a compiled
    # Cython extension; the forward never uses it.
    evaluation = types.ModuleType("evaluation")
    evaluation.evaluate = types.ModuleType("evaluation.evaluate")
    evaluation.evaluate.mt = None
    sys.modules.update({"evaluation": evaluation, "evaluation.evaluate": evaluation.evaluate})
    resnet = import_from(root, "models.resnet.resnet_single_scale")
    semseg = import_from(root, "models.semseg")
    torch.manual_seed(0)
    model = semseg.SemsegModel(resnet.resnet18(pretrained=False, use_bn=True, efficient=False),
                               19).eval()
    fill_reference_weights_(model)
    (image,) = seeded_images(1, SWIFTNET_SIZE, seed=1)
    with torch.no_grad():
        logits, _ = model(image.clone(), None, SWIFTNET_SIZE)  # normalises its input in place
    save(f"swiftnet_{SWIFTNET_SIZE[0]}x{SWIFTNET_SIZE[1]}.pt", dict(
        official_repository="orsic/swiftnet", official_commit=commit,
        model_kwargs=dict(num_classes=19), official_entries=official_entries(model),
        image=image, logits=logits))


def save(file_name: str, data: dict) -> None:
    """Write ``data`` to ``tests/data/file_name`` and check that it loads without pickle."""
    path = DATA_DIR / file_name
    torch.save(data, path)
    torch.load(path, weights_only=True)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")


def main() -> None:
    """Parse the official folders and write every reference."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gmflow", type=Path, required=True, help="haofeixu/gmflow source")
    parser.add_argument("--swiftnet", type=Path, required=True, help="orsic/swiftnet source")
    parser.add_argument("--gmflow-commit", help="its commit, when the folder is no checkout")
    parser.add_argument("--swiftnet-commit", help="its commit, when the folder is no checkout")
    args = parser.parse_args()
    torch.set_num_threads(1)
    make_gmflow(args.gmflow, commit_of(args.gmflow, args.gmflow_commit))
    make_swiftnet(args.swiftnet, commit_of(args.swiftnet, args.swiftnet_commit))


if __name__ == "__main__":
    main()
