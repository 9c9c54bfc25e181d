"""The head and the tail of the zoo's networks, in this process: every executed cut gives the
unsplit output bit for bit, with every value the head computed and did not send replaced by
NaN in the tail (so one read without having been sent would show)."""

from __future__ import annotations

import pytest
import torch

from profiling.runner import analyse_cuts, run_head, run_tail
from profiling.stages import call_model, iter_tensors
from zoo.tools.composition import checked_config
from zoo.tools.job_inputs import prepare

CASES = {
    "swiftnet": (["model=swiftnet", "input.size=[64,128]"], None),
    "resnet18": (["model=torchvision", "model.arch=resnet18", "input.size=[64,64]"], None),
    "gmflow": (["model=gmflow", "input.size=[64,96]"], None),
    # the RoI pooling cut: a mode that held a result's Python object made torchvision's code
    # run a detach there that the analysis had not seen
    "faster_rcnn": (["model=faster_rcnn", "input.size=[128,128]"],
                    ["rpn", "roi_heads_box_roi_pool", "roi_heads"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_every_cut_of_a_zoo_network_gives_the_unsplit_output(case):
    overrides, names = CASES[case]
    torch.manual_seed(0)
    cfg = checked_config(overrides)
    model, inputs, attach, _ = prepare(cfg, torch.device("cpu"))
    with torch.inference_mode():  # the steady forward, caches filled (GMFlow's masks)
        reference = [t.clone() for t in iter_tensors(call_model(model, inputs))]
    analysis = analyse_cuts(model, inputs, attach=attach, codecs=(), depth=1)
    cuts = [cut for cut in analysis.cuts if (cut.name in names if names else
                                             cut.kind != "op")]
    assert len(cuts) >= (len(names) if names else 4)
    placeholders = [torch.full_like(t, float("nan")) if t.is_floating_point() else t
                    for t in inputs]
    for cut in cuts:
        head = run_head(model, inputs, cut.position, cut.tensors, attach)
        assert len(head.tape) == cut.position
        tail = run_tail(model, placeholders, cut.position, cut.tensors, head.pieces, head.tape,
                        attach, poison=True)
        output = list(iter_tensors(tail.output))
        assert len(output) == len(reference)
        assert all(torch.equal(a, b) for a, b in zip(output, reference)), cut.name
