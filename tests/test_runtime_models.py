"""Every zoo family, and a torchvision network no other runtime test uses, on both runtimes in
float32 and int8 at a small size (issue 26): the stage names of a torch run, stage times that
add up to the forward, an engine per stage. Slow (an export each); the exports are cached
across the cases of one model."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.runtimes]

#: One small case per family; mobilenet_v3_small is held out of the other runtime tests.
CASES = {
    "faster_rcnn": ["model.min_size=64", "model.max_size=64", "input.size=[64,64]",
                    "model.rpn_post_nms_top_n_test=10"],
    "gmflow": ["input.size=[64,64]"],
    "swiftnet": ["input.size=[64,64]"],
    "swin_unet": ["input.size=[64,64]", "model.img_size=64"],
    "torchvision": ["model.arch=mobilenet_v3_small", "input.size=[64,64]"],
}


@pytest.fixture(scope="module")
def export_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("xdg")


def _run(overrides, folder):
    from zoo.tools.composition import compose_config
    from zoo.tools.job import run_profile

    cfg = compose_config([*overrides, "run.warmup=1", "run.repeats=2", "summary=false"])
    return run_profile(cfg, folder).result


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("runtime", ["onnxruntime", "openvino"])
@pytest.mark.parametrize("model", list(CASES))
def test_zoo_family_runs_on_the_runtime(model, runtime, dtype, export_cache, tmp_path,
                                        monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(export_cache))
    overrides = [f"model={model}", *CASES[model]]
    reference = _run([*overrides, "collectors=[payload]"], tmp_path / "torch")
    result = _run([*overrides, f"run.runtime={runtime}", f"run.dtype={dtype}"],
                  tmp_path / "runtime")
    stages = result.stages
    assert list(stages["stage"]) == list(reference.stages["stage"])
    engines = set(stages.loc[stages["kind"] != "probe", "engine"])
    assert runtime in "+".join(engines) and "" not in engines
    if model == "faster_rcnn":  # its post-processing does not export
        assert "torch" in engines
    for forward, forward_ms in zip(result.timed, result.forward_ms):
        top = sum(call.metrics["cpu_time_ms"] for call in forward if call.depth == 0)
        assert top == pytest.approx(forward_ms, rel=1e-6)
    if dtype == "int8" and model == "torchvision":  # a plain CNN: quantised boundaries
        quantised = stages[(stages["kind"] == "stage") & (stages["depth"] == 0)]
        float_rows = reference.stages[(reference.stages["kind"] == "stage")
                                      & (reference.stages["depth"] == 0)]
        smaller = (quantised["in_bytes"].values * 4 == float_rows["in_bytes"].values).sum()
        assert smaller >= len(quantised) // 2
