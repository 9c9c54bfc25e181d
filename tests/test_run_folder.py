"""The run folder belongs to ``profiling``: a Python user's ``write_run`` gives the folder the
command line writes (issue: the house)."""

import json

import pandas as pd
import pytest
import torch

import zoo
from profiling import ProfilingError, profile_model, stage, write_run
from profiling.reports.run_folder import run_files
from zoo.tools.job import run_profile
from zoo.tools.composition import compose_config

META = ["model=swiftnet", "device=meta", "input.size=[64,128]", "summary=false"]


def test_python_users_get_the_folder_the_cli_writes(tmp_path):
    cli = run_profile(compose_config(META), tmp_path / "cli", print_summary=False)
    model = zoo.create_model("swiftnet").eval().to("meta")
    inputs = model.example_inputs(1, (64, 128), device="meta")
    result = profile_model(model, inputs, collectors=["payload", "tensor_memory", "op_counts"])
    paths = write_run(result, tmp_path / "python", model)
    assert sorted(p.name for p in paths) == sorted(p.name for p in cli.files) == [
        "layers.csv", "layers.txt", "meta.json", "modules.csv", "modules.txt", "operators.csv",
        "payload.log", "stages.csv"]
    ours, theirs = (pd.read_csv(tmp_path / name / "stages.csv") for name in ("python", "cli"))
    pd.testing.assert_frame_equal(ours, theirs)
    meta = json.loads((tmp_path / "python" / "meta.json").read_text())
    assert meta["device"] == "meta" and meta["parameters"] == 11_797_071
    assert meta["totals"] == json.loads((tmp_path / "cli" / "meta.json").read_text())["totals"]


def test_a_timed_run_keeps_its_repeats_and_its_notes():
    class Doubling(torch.nn.Module):
        def forward(self, x):
            with stage("double", x) as s:
                x.mul_(2)
                return s.output(x + 1)

    result = profile_model(Doubling().eval(), (torch.ones(3),), collectors=["cpu_time"],
                           warmup=0, repeats=3)
    files, record = run_files(result, notes=["mine"])
    assert sorted(files) == ["meta.json", "payload.log", "stages.csv", "times.csv"]
    assert record.notes == ["mine", "the model changes its inputs in place; every pass was given the "
                             "original values"]
    # each repeat: the stage and the other row (the forward's time outside it)
    assert list(files["times.csv"]["stage"]) == ["double", "other"] * 3
    assert json.loads(files["meta.json"])["parameters"] is None


def test_an_existing_folder_is_refused(tmp_path):
    result = profile_model(torch.nn.Identity().eval(), (torch.ones(1),), collectors=["payload"])
    write_run(result, tmp_path / "run")
    with pytest.raises(ProfilingError, match="already holds files") as refused:
        write_run(result, tmp_path / "run")
    # a library error gives the library's hint, not the command line's run.overwrite=true
    assert "write_run(..., overwrite=True)" in str(refused.value)
    assert "run.overwrite" not in str(refused.value)
    assert write_run(result, tmp_path / "run", overwrite=True)


def test_a_folder_of_an_older_version_reads_with_todays_memory_columns(tmp_path):
    from profiling.reports import read_run

    (tmp_path / "meta.json").write_text(json.dumps({"config": {}}))
    (tmp_path / "stages.csv").write_text(
        "stage,kind,depth,call_index,order,in_bytes,out_bytes,cpu_mem_alloc_mb,cpu_mem_peak_mb,"
        "cuda_mem_peak_mb\nencoder,stage,0,0,0,4,4,1.5,2.5,3.5\n")
    stages = read_run(tmp_path).stages
    assert list(stages.columns)[7:] == ["tensor_retained_mb", "tensor_peak_mb", "cuda_peak_mb"]
    assert stages.loc[0, "tensor_peak_mb"] == 2.5
