"""Payload walking of every container kind, with exact byte counts."""

from collections import OrderedDict, namedtuple
from dataclasses import dataclass

import torch
from torchvision.models.detection.image_list import ImageList

from profiling.stages.payload import PayloadGroup, TensorLeaf, iter_leaves, walk_payload
from profiling.reports.payload_log import format_payload_lines

Pair = namedtuple("Pair", ["left", "right"])


@dataclass
class Batch:
    images: torch.Tensor
    name: str


def test_tensor_leaf():
    leaf = walk_payload(torch.zeros(2, 3, dtype=torch.float16))
    assert leaf == TensorLeaf((2, 3), torch.float16, "cpu", 12)


def test_every_container_kind_and_totals():
    value = {
        "list": [torch.zeros(4), torch.zeros(2, dtype=torch.int64)],       # 16 + 16
        "tuple": (torch.zeros(1, dtype=torch.uint8), 7, None),             # 1
        "named": Pair(torch.zeros(3), torch.zeros(3, dtype=torch.float64)),  # 12 + 24
        "data": Batch(torch.zeros(1, 2, 2), "x"),                          # 16
        "images": ImageList(torch.zeros(1, 3, 4, 4), [(4, 4)]),            # 192
        "ordered": OrderedDict(a=torch.zeros(5)),                          # 20
    }
    node = walk_payload(value)
    assert isinstance(node, PayloadGroup) and node.kind == "dict"
    assert node.nbytes == 16 + 16 + 1 + 12 + 24 + 16 + 192 + 20
    kinds = {key: child.kind for key, child in node.items}
    assert kinds == {"list": "list", "tuple": "tuple", "named": "namedtuple", "data": "dataclass",
                     "images": "object", "ordered": "dict"}
    sizes = [leaf.nbytes for _, leaf in iter_leaves(node)]
    assert sizes == [16, 16, 1, 12, 24, 16, 192, 20]


def test_values_without_tensors_are_left_out():
    assert walk_payload([1, "a", None]) is None
    assert walk_payload(torch.nn.Linear(2, 2)) is None


def test_views_count_their_logical_size():
    base = torch.zeros(10, 10)
    assert walk_payload(base[:2]).nbytes == 80


def test_log_lines_in_the_seed_layout():
    features = OrderedDict([("0", torch.zeros(1, 256, 200, 200)),
                            ("pool", torch.zeros(1, 256, 13, 13))])
    lines = format_payload_lines("backbone_fpn_out([features])", walk_payload(features))
    assert lines == [
        "backbone_fpn_out([features])[0] :: torch.Size([1, 256, 200, 200]) 40.96 Mb",
        "backbone_fpn_out([features])[1] :: torch.Size([1, 256, 13, 13]) 0.173056 Mb",
        "backbone_fpn_out([features]) :: 41133056",
    ]
    image_list = ImageList(torch.zeros(1, 3, 800, 800), [(800, 800)])
    assert format_payload_lines("transform_out([images])", walk_payload(image_list)) == [
        "transform_out([images]) :: torch.Size([1, 3, 800, 800]) 7.68 Mb"]


def test_iter_tensors_walks_the_same_containers():
    from profiling.stages.payload import iter_tensors
    images = torch.zeros(1, 3, 4, 4)
    value = [ImageList(images, [(4, 4)]), {"b": Pair(torch.ones(1), 3)}, "text"]
    tensors = list(iter_tensors(value))
    assert len(tensors) == 2 and tensors[0] is images
    assert [t.numel() * t.element_size() for t in tensors] == [
        leaf.nbytes for _, leaf in iter_leaves(walk_payload(value))]
