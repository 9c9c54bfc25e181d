"""Which stage a runtime node counts to: own name first, neighbours last, and a fused node in
the stage of its main operator (profiling.runtimes.stage_map, .main_operator, .export)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from profiling.runtimes.graph import OnnxGraph
from profiling.runtimes.main_operator import nearest_main
from profiling.runtimes.stage_map import StageMap
from runtime_models import needs_onnxruntime, needs_openvino


def _graph() -> OnnxGraph:
    """x -> Conv (stem) -> BatchNormalization (norm) -> Relu (act) -> Conv (head)."""
    return OnnxGraph(
        producers={"conv": "node_Conv", "bn": "node_bn", "relu": "node_relu", "y": "node_head"},
        consumers={"x": ["node_Conv"], "conv": ["node_bn"], "bn": ["node_relu"],
                   "relu": ["node_head"]},
        shapes={}, outputs=["y"],
        op_types={"node_Conv": "Conv", "node_bn": "BatchNormalization", "node_relu": "Relu",
                  "node_head": "Conv"},
        node_inputs={"node_Conv": ["x"], "node_bn": ["conv"], "node_relu": ["bn"],
                     "node_head": ["relu"]})


STAGES = {"node_Conv": "stem#0", "node_bn": "norm#0", "node_relu": "act#0", "node_head": "head#0"}


def test_a_fused_convolution_counts_to_the_convolutions_stage():
    """Before: ONNX Runtime's fused node is named after its output (``relu_nchwc``), so the
    convolution's time landed in the activation's stage and the convolution's read 0 ms
    (resnet's conv1 0 ms, bn1 all of it; swiftnet's up3 1.8 ms against 194 in PyTorch)."""
    mapping = StageMap(STAGES, _graph().producers, structure=_graph(),
                       main_nodes={"relu_nchwc"})
    assert mapping.placed("relu_nchwc") == ("stem#0", True)  # spans act, norm and stem
    alone = StageMap(STAGES, _graph().producers, structure=_graph())
    assert alone.placed("relu_nchwc") == ("act#0", False)  # an activation alone
    told = StageMap(STAGES, _graph().producers, constituents={"node_Conv": ["node_relu"]})
    assert told.placed("node_Conv") == ("stem#0", True)  # the runtime says what it fused
    assert mapping.placed("node_head") == ("head#0", False)
    assert mapping.across_stages(["relu_nchwc", "node_head", "bn"]) == ["relu_nchwc"]
    times, unmapped = mapping.stage_times({"relu_nchwc": 2.0, "node_head": 1.0})
    assert times == {"stem#0": 2.0, "head#0": 1.0} and unmapped == 0.0


def test_the_main_operator_is_found_only_through_operators_that_fuse():
    graph = _graph()
    graph.op_types["node_bn"] = "Resize"  # nothing fuses a resize into a convolution
    assert nearest_main("node_relu", graph.makers, lambda n: graph.op_types[n] == "Conv",
                        lambda n: graph.op_types[n] in ("Relu", "BatchNormalization")) is None
    mapping = StageMap(STAGES, graph.producers, structure=graph, main_nodes={"relu_nchwc"})
    assert mapping.placed("relu_nchwc") == ("act#0", False)


def test_a_node_is_placed_by_its_own_name_before_the_values_it_reads():
    """Before: a suffixed node (``conv_nchwc``) reading a value made outside every stage was
    placed by that value and went to ``other`` (GMFlow's first convolution: 1.9 ms of 76)."""
    mapping = StageMap({"node_Conv": "stem#0", "node_pre": ""},
                       producers={"conv": "node_Conv", "pre": "node_pre"},
                       aliases={"conv_nchwc": ["pre", "conv_nchwc"]})
    assert mapping.stage_of("conv_nchwc") == "stem#0"
    only_aliases = StageMap({"node_Conv": "stem#0", "node_pre": ""},
                            producers={"conv": "node_Conv", "pre": "node_pre"},
                            aliases={"Reorder_7": ["pre", "conv"]})
    assert only_aliases.stage_of("Reorder_7") == "stem#0"  # the alias in a stage wins
    outside = StageMap({"node_pre": ""}, producers={"pre": "node_pre"},
                       aliases={"Reorder_8": ["pre"]})
    assert outside.stage_of("Reorder_8") == ""


class ConvNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.act = nn.ReLU()
        self.head = nn.Conv2d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.act(self.bn(self.conv(x))))


ATTACH = {"conv": "conv", "bn": "bn", "act": "act", "head": "head"}


@needs_onnxruntime
def test_the_exporter_folding_a_norm_keeps_the_convolutions_tag(tmp_path):
    """The exporter's optimiser folds the batch norm into the convolution and gives the
    result the norm's metadata: the tag is the convolution's."""
    import onnx
    from profiling.runtimes.export import export_onnx

    exported = export_onnx(ConvNorm().eval(), (torch.randn(1, 3, 8, 8),), tmp_path / "m.onnx",
                           attach=ATTACH)
    convs = [n.name for n in onnx.load(str(exported.path)).graph.node if n.op_type == "Conv"]
    assert sorted(exported.node_stages[n] for n in convs) == ["conv#0", "head#0"]


@needs_onnxruntime
@pytest.mark.parametrize("runtime", ["onnxruntime", pytest.param("openvino",
                                                                 marks=needs_openvino)])
def test_every_stage_holding_a_convolution_gets_its_time(runtime, tmp_path):
    """The MACs of a stage and its runtime time are in the same place: the convolutions'
    stages have time, the folded norm's and the fused activation's none."""
    from profiling.runtimes import profile_runtime

    torch.manual_seed(0)
    profiled = profile_runtime(ConvNorm().eval(), (torch.randn(1, 3, 32, 32),),
                               runtime=runtime, repeats=3, attach=ATTACH, workdir=tmp_path)
    table = profiled.result.stages.set_index("stage")
    for name in ("conv", "head"):
        assert table.loc[name, "macs"] > 0 and table.loc[name, "cpu_time_ms_median"] > 0
    assert table.loc["bn", "macs"] == 0 and table.loc["bn", "cpu_time_ms_median"] == 0
    # at most a layout reorder of the activation's output is left in its stage
    assert table.loc["act", "cpu_time_ms_median"] < table.loc["conv", "cpu_time_ms_median"]
    assert profiled.deployment["nodes_across_stages"] >= 1  # conv + bn + relu: one node
