"""The profile job flows one way: a frozen description, a runner that returns a result, then
a writer and a printer that read only that result (issue 34: no forward while writing, no
totals recomputed from the model, nothing gathered into the job as it runs)."""

import dataclasses
import gzip
import json

import pytest

from zoo.tools.composition import compose_config
from zoo.tools.job_description import prepare_job
from zoo.tools.job_printer import summary_lines
from zoo.tools.job_runner import run_job
from zoo.tools.job_writer import write_job

RUN = ["model=swiftnet", "device=cpu", "input.size=[32,32]", "run.warmup=0", "run.repeats=2",
       "trace=true", "summary=false"]


@pytest.fixture(scope="module")
def job():
    return prepare_job(compose_config(RUN))


def test_the_job_and_its_result_are_frozen(job):
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.notes = ("changed",)
    result = run_job(job, collectors=["payload"], trace=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.notes = ()
    assert result.files == {}  # trace=False: no trace forward, no trace file


def test_the_writer_and_the_printer_run_no_forward(job, tmp_path):
    forwards = []
    handle = job.model.register_forward_pre_hook(lambda module, args: forwards.append(1))
    try:
        result = run_job(job, collectors=["payload", "cpu_time"])
        # the payload pass, two timed forwards and the trace's one
        assert len(forwards) == 4
        folder = write_job(job, result, tmp_path / "run")
        lines = summary_lines(result, folder)
    finally:
        handle.remove()
    assert len(forwards) == 4
    assert json.loads(gzip.decompress((tmp_path / "run" / "trace.json.gz").read_bytes()))
    parameters = sum(p.numel() for p in job.model.parameters())
    assert result.totals.parameters == parameters == folder.record.meta["parameters"]
    assert len(result.totals.forward_ms) == 2
    written = [line for line in lines if line.startswith("files written: ")]
    assert len(written) == 1 and "trace.json.gz" in written[0]  # a noise line may follow
