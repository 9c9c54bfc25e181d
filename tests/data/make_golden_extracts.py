"""Extract the compact GMFlow golden references in ``tests/data`` from the large golden files.

Usage, from the repository root, with the golden folder beside the repository (as in CI)::

    python tests/data/make_golden_extracts.py [--golden ../shared/golden]

The golden files (``../shared/golden/gmflow*_official_64x96.pt``, ~19 MB each) hold the
official code's outputs for its default initialisation under ``torch.manual_seed(0)``, with the
whole state dict. Our models build the very same state dict from the same seed, so the
extracts keep only the inputs, the outputs, the options and a fingerprint per state-dict entry
(``reference_weights.fingerprint``: 64 of its values, its largest magnitude and the sum of its
magnitudes): the test rebuilds the weights from the seed and checks them against the
fingerprints before it compares flows. A fingerprint, not a digest: ATen's scalar kernels
(``ATEN_CPU_CAPABILITY=default``) round the initialisers' random fills a few eps differently
from its AVX2 and AVX-512 ones. Each extract loads with ``torch.load(path, weights_only=True)``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

DATA_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(DATA_DIR.parents[1]))
sys.path.insert(0, str(DATA_DIR.parent))
import zoo  # noqa: E402
from reference_weights import fingerprint, fingerprint_mismatch  # noqa: E402

#: model name -> (golden file, extract written here)
EXTRACTS = {"gmflow": ("gmflow_official_64x96.pt", "gmflow_golden_64x96.pt"),
            "gmflow_refine": ("gmflow_refine_official_64x96.pt", "gmflow_refine_golden_64x96.pt")}
#: the seed the official code and our models are initialised with
SEED = 0


def seeded_model(name: str) -> torch.nn.Module:
    """Our model built under ``torch.manual_seed(SEED)``: the golden files' weights."""
    torch.manual_seed(SEED)
    return zoo.create_model(name).eval()


def extract(golden_dir: Path, name: str) -> None:
    """Write the extract of one golden file, after checking that the seed rebuilds it."""
    source, target = EXTRACTS[name]
    golden = torch.load(golden_dir / source, map_location="cpu", weights_only=False)
    ours = seeded_model(name).state_dict()
    fingerprints = {key: fingerprint(value) for key, value in golden["state_dict"].items()}
    if list(ours) != list(fingerprints) or any(
            fingerprint_mismatch(value, fingerprints[key]) for key, value in ours.items()):
        raise SystemExit(f"{name}: the seeded initialisation no longer rebuilds {source}")
    path = DATA_DIR / target
    torch.save({"seed": SEED, "source": golden["source"], "golden_file": source,
                "model_kwargs": golden["model_kwargs"],
                "forward_kwargs": golden["forward_kwargs"],
                "state_dict_fingerprints": fingerprints,
                "img0": golden["img0"], "img1": golden["img1"],
                "flow_preds": list(golden["flow_preds"]),
                "flow_preds_bidir": list(golden["flow_preds_bidir"])}, path)
    torch.load(path, weights_only=True)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")


def main() -> None:
    """Parse the golden folder and write every extract."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--golden", type=Path, default=DATA_DIR.parents[2] / "shared" / "golden")
    args = parser.parse_args()
    for name in EXTRACTS:
        extract(args.golden, name)


if __name__ == "__main__":
    main()
