"""GMFlow's global correlation and propagation are counted as the official algorithm."""

import torch

import zoo
from profiling.runner.passes import profile_model


def _stage_counts(device):
    torch.manual_seed(0)
    model = zoo.create_model("gmflow").eval().to(device)
    inputs = model.example_inputs(1, (64, 96), generator=torch.Generator().manual_seed(0),
                                  device=device)
    result = profile_model(model, inputs, collectors=["op_counts"], warmup=0, repeats=1)
    return result.stages.set_index("stage")


def test_global_correlation_and_propagation_macs():
    stages = _stage_counts("cpu")
    tokens, channels = (64 // 8) * (96 // 8), 128
    correlation = tokens * tokens * channels          # B*HW*HW*C, B=1
    soft_argmax = tokens * tokens * 2                 # probabilities @ pixel coordinates
    assert stages.loc["global_correlation_softmax", "macs"] == correlation + soft_argmax
    projections = 2 * tokens * channels * channels    # q and k projections (linear)
    assert stages.loc["feature_flow_attn", "macs"] == projections + correlation + soft_argmax


def test_meta_and_real_counts_are_identical():
    real, meta = _stage_counts("cpu"), _stage_counts("meta")
    for column in ("macs", "flops", "bytes_read", "bytes_written"):
        assert list(real[column].fillna(-1)) == list(meta[column].fillna(-1)), column


def test_profiled_output_is_the_plain_output_bit_for_bit(monkeypatch):
    # with the fused CPU path on, the instrumenting pass runs the explicit path: the returned
    # output must still come from an uninstrumented forward
    monkeypatch.setattr("zoo.models.networks.gmflow.attention.FUSED_MIN_KEYS_CPU", 0)
    torch.manual_seed(0)
    model = zoo.create_model("gmflow").eval()
    inputs = model.example_inputs(1, (64, 96), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        plain = model(*inputs)["flow_preds"][-1]
    result = profile_model(model, inputs, collectors=["payload", "tensor_memory", "op_counts",
                                                      "cpu_time"], warmup=0, repeats=1)
    assert torch.equal(result.output["flow_preds"][-1], plain)
