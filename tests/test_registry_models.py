"""Every registered zoo model, tested by being registered: it builds, declares its stages,
and runs the whole analysis on the meta device at a small size."""

import pytest
import torch

import zoo
from profiling.runner import profile_model

#: models that need an ``arch`` option; their own tests cover them.
GENERIC = {"torchvision", "timm"}
MAX_SIDE = 256


def _small_size(model):
    height, width = model.default_input_size
    scale = min(1.0, MAX_SIDE / max(height, width))
    return model.check_input_size((max(int(height * scale), 32), max(int(width * scale), 32)),
                                  pad=True)


@pytest.mark.parametrize("name", [n for n in zoo.list_models() if n not in GENERIC])
def test_model_declares_and_runs_its_stages_on_meta(name):
    torch.manual_seed(0)
    model = zoo.create_model(name).eval()
    assert model.stages, f"{name} declares no stages"
    size = _small_size(model)
    model = model.to("meta")
    inputs = model.example_inputs(1, size, generator=torch.Generator().manual_seed(0),
                                  device="meta")
    result = profile_model(model, inputs, collectors=["payload", "op_counts"], warmup=0,
                           repeats=1, attach=model.stage_paths())
    seen = [c.name for c in result.calls]  # stages and probes
    assert set(model.stages) <= set(seen), set(model.stages) - set(seen)
    stage_rows = result.stages[result.stages.kind == "stage"]
    assert (stage_rows.groupby("stage")["macs"].max() > 0).any()
    assert result.collectors["op_counts"].total.macs >= stage_rows[stage_rows.depth == 0].macs.sum()
