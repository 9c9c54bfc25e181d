"""Device ceilings files for the roofline (profiling/counting/roofline.py, ``load_ceilings``, and
``roofline.ceilings``/``roofline.dtype``): values that are not finite numbers above 0, a mapping
where a number belongs, YAML that does not parse, an unknown name or dtype. Each is refused in
one line before the profile runs."""

import pytest

from cli_runner import run_main
from meta_overrides import ANY_MODEL_META as META
from profiling import ProfilingError
from profiling.counting.roofline import load_ceilings
from zoo.tools.composition import check_overrides
from zoo.tools.profile import main


@pytest.mark.parametrize("content, expected", [
    ("name: x\npeak_flops_per_s: {float32: 1e12}\nmemory_bandwidth_bytes_per_s: 0\n",
     "memory_bandwidth_bytes_per_s must hold finite values above 0, got 0.0"),
    ("name: x\npeak_flops_per_s: {float32: -5}\nmemory_bandwidth_bytes_per_s: 1e9\n",
     "peak_flops_per_s.float32 must hold finite values above 0, got -5.0"),
    ("name: x\npeak_flops_per_s: {float32: .inf}\nmemory_bandwidth_bytes_per_s: 1e9\n",
     "must hold finite values above 0"),
    ("name: [unclosed\n", "is not valid YAML (line 2)"),
    ("just text\n", "is not a ceilings file"),
])
def test_bad_ceilings_fail_before_the_profile(content, expected, tmp_path, capsys, monkeypatch):
    ceilings = tmp_path / "ceilings.yaml"
    ceilings.write_text(content)
    run_dir = tmp_path / "run"
    outcome = run_main(main, ["model=swiftnet", *META, f"roofline.ceilings={ceilings}",
                              f"hydra.run.dir={run_dir}"], capsys, monkeypatch)
    assert outcome.code == 2 and expected in outcome.line
    assert not run_dir.exists()


@pytest.mark.parametrize("content, expected", [
    ("name: x\npeak_flops_per_s: {float32: 1.0e12}\nmemory_bandwidth_bytes_per_s: {a: 1}\n",
     "memory_bandwidth_bytes_per_s must be a number, got dict"),
    ("name: x\npeak_flops_per_s: {float32: {a: 1}}\nmemory_bandwidth_bytes_per_s: 1.0e+9\n",
     "peak_flops_per_s.float32 must be a number, got dict"),
    ("name: x\npeak_flops_per_s: [1, 2]\nmemory_bandwidth_bytes_per_s: 1.0e+9\n",
     "peak_flops_per_s must be a mapping"),
    ("name: x\npeak_flops_per_s: {float32: true}\nmemory_bandwidth_bytes_per_s: 1.0e+9\n",
     "peak_flops_per_s.float32 must be a number, got bool"),
])
def test_a_ceilings_file_with_a_mapping_where_a_number_belongs(tmp_path, content, expected):
    path = tmp_path / "device.yaml"
    path.write_text(content)
    with pytest.raises(ProfilingError, match=expected) as raised:
        load_ceilings(path)
    assert str(raised.value).startswith(str(path))


@pytest.mark.parametrize("overrides, problem", [
    (["roofline.ceilings=nope"], "roofline.ceilings=nope: no device ceilings named 'nope'"),
    (["roofline.ceilings=/nowhere/c.yaml"], "roofline.ceilings=/nowhere/c.yaml: ceilings file "
                                            "not found: /nowhere/c.yaml"),
    (["roofline.ceilings=h100_sxm", "roofline.dtype=int3"],
     "roofline.ceilings=h100_sxm: no int3 peak for h100_sxm; it has: float64, float32"),
    (["roofline.ceilings=raspberry_pi5", "run.dtype=bfloat16"],
     "roofline.ceilings=raspberry_pi5: no bfloat16 peak for raspberry_pi5; it has: float32"),
])
def test_ceilings_are_checked_before_the_work(overrides, problem):
    """Before: the ceilings were first read when the run folder was written, after every timed
    forward (a wrong name or type lost the run, or refused it after the model was built)."""
    assert check_overrides(["model=swiftnet", *overrides]).startswith(problem)
    assert check_overrides(["model=swiftnet", "roofline.ceilings=h100_sxm",
                            "run.dtype=int8"]) is None
