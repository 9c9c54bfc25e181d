"""What a model is, declared where it is defined (issue 34): its task, and from it the metric
by which an int8 runtime's output is judged; no list of model names in the generic code."""

import pytest
import torch
from torch import nn

import zoo
from zoo.models import TASK_METRICS, ZooModel
from zoo.deploy import int8_metric


class _TinySegmenter(ZooModel):
    """Two-class logits per pixel from a 1x1 convolution: a segmentation model of the test."""

    stage_names = ("head",)
    default_input_size = (4, 4)
    task = "segmentation"

    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Conv2d(3, 2, 1)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(images)


def test_a_new_segmentation_model_gets_pixel_agreement_from_its_task(monkeypatch):
    import zoo.models.registry

    zoo.list_models()  # the zoo's own models are registered before the copy
    registry = zoo.models.registry
    monkeypatch.setattr(registry, "_BUILDERS", dict(registry._BUILDERS))
    monkeypatch.setattr(registry, "_REGISTRATIONS", dict(registry._REGISTRATIONS))
    zoo.register_model(lambda: _TinySegmenter(), name="tiny_segmenter_of_the_test")
    model = zoo.create_model("tiny_segmenter_of_the_test")
    assert model.int8_task_metric == "pixel_agreement"
    reference = torch.zeros(1, 2, 2, 2)
    reference[0, 0] = 1.0  # every pixel labelled 0
    got = reference.clone()
    got[0, 1, 0, 0] = 2.0  # one pixel of four now labelled 1
    assert int8_metric(model.int8_task_metric, reference, [got.numpy()]) == {
        "pixel_agreement": 0.75}


@pytest.mark.parametrize("name, task", [("swiftnet", "segmentation"),
                                        ("swin_unet", "segmentation"), ("gmflow", "flow"),
                                        ("gmflow_unet", "flow"), ("faster_rcnn", "detection")])
def test_the_zoos_models_declare_their_task(name, task):
    from zoo.tools.model_build import parameters_on_meta

    with parameters_on_meta():
        model = zoo.create_model(name)
    assert model.task == task
    assert model.int8_task_metric == TASK_METRICS[task]


@pytest.mark.parametrize("options, task, metric", [
    ({"name": "torchvision", "arch": "resnet18"}, "classification", "top1_agreement"),
    ({"name": "torchvision", "arch": "lraspp_mobilenet_v3_large"}, "segmentation",
     "pixel_agreement"),
    ({"name": "torchvision", "arch": "raft_small"}, "flow", "end_point_error_px"),
    ({"name": "torchvision", "arch": "ssdlite320_mobilenet_v3_large"}, "detection", None),
    ({"name": "torchvision", "arch": "r3d_18"}, "classification", "top1_agreement"),
    ({"name": "timm", "arch": "resnet18"}, "classification", "top1_agreement"),
])
def test_library_models_declare_their_task_by_architecture_family(options, task, metric):
    from zoo.tools.model_build import build_model

    model = build_model(options, seed=0, device=torch.device("meta"))
    assert (model.task, model.int8_task_metric) == (task, metric)


def test_a_model_that_declares_no_task_gets_no_metric():
    assert ZooModel().int8_task_metric is None
    assert int8_metric(None, torch.ones(2, 3), [torch.ones(2, 3).numpy()]) == {}
