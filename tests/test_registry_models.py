"""Every registered zoo model, tested by being registered: it builds, declares its stages,
and runs the whole analysis on the meta device at a small size."""

import pytest
import torch

import zoo
from zoo.models import TASK_METRICS
from profiling.runner.passes import profile_model

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
    assert model.stage_names, f"{name} declares no stages"
    assert model.task in TASK_METRICS, f"{name} declares no task"
    size = _small_size(model)
    model = model.to("meta")
    inputs = model.example_inputs(1, size, generator=torch.Generator().manual_seed(0),
                                  device="meta")
    result = profile_model(model, inputs, collectors=["payload", "op_counts"], warmup=0,
                           repeats=1, attach=model.stage_paths())
    seen = [c.name for c in result.calls]  # stages and probes
    assert set(model.stage_names) <= set(seen), set(model.stage_names) - set(seen)
    stage_rows = result.stages[result.stages.kind == "stage"]
    assert (stage_rows.groupby("stage")["macs"].max() > 0).any()
    assert result.collectors["op_counts"].total.macs >= stage_rows[stage_rows.depth == 0].macs.sum()


@pytest.mark.parametrize("name, options, message", [
    ("gmflow", dict(in_channels=0), "in_channels=0 is not accepted; accepted: an integer >= 1"),
    ("gmflow", dict(ffn_dim_expansion=0), "ffn_dim_expansion=0 is not accepted"),
    ("gmflow", dict(num_transformer_layers=-1), "accepted: an integer >= 0"),
    ("gmflow_unet", dict(decoder_channels=[128, 0, 64, 16]),
     "decoder_channels=[128, 0, 64, 16] is not accepted; accepted: a non-empty list of "
     "integers >= 1"),
    ("swiftnet", dict(num_classes=0), "num_classes=0 is not accepted"),
    ("swin_unet", dict(in_channels=-1), "in_channels=-1 is not accepted"),
    ("faster_rcnn", dict(min_size=0), "min_size=0 is not accepted"),
    ("timm", dict(in_channels=0), "in_channels=0 is not accepted"),
    ("torchvision", dict(num_classes=-3), "num_classes=-3 is not accepted; accepted: null or "
                                          "an integer >= 1"),
    ("swiftnet", dict(in_channels=True), "in_channels=true is not accepted"),
])
def test_sizes_below_their_minimum_are_one_config_error(name, options, message):
    with pytest.raises(zoo.options.ConfigError) as error:
        zoo.create_model(name, **options)
    assert message in str(error.value)
