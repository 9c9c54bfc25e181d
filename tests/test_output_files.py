"""The one file a tool writes (``--out`` of zoo.report, zoo.compare and zoo.collect) and the
files zoo.plot adds to a run: an existing file is replaced only with ``--overwrite`` and keeps
its mode, a symbolic link is followed, another file system is no obstacle, and nothing is
left half-written (docs/trust.md, "No two runs share a folder")."""

import errno
import os
import uuid
from pathlib import Path

import pytest

from cli_runner import run_main
from profiling.files import write_files
from profiling.files import writing
from profiling.reports.html import report as report_module
from report_runs import tiny_run
from zoo.tools import collect, compare, report

#: Each tool's command line writing ``out`` from the run ``run``, and the file name it takes.
TOOLS = {
    "report": (report.main, lambda run, out: [str(run), "--out", str(out)], "page.html"),
    "compare": (compare.main, lambda run, out: [str(run), str(run.parent / "b"), "--out",
                                                str(out)], "table.csv"),
    "collect": (collect.main, lambda run, out: [str(run), "--out", str(out)], "table.csv"),
}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    tiny_run(root / "b", width=16)
    return tiny_run(root / "a")


def _run_tool(tool: str, run: Path, out: Path, capsys, monkeypatch, *extra: str):
    main, argv, _ = TOOLS[tool]
    return run_main(lambda: main([*argv(run, out), *extra]), [], capsys, monkeypatch)


@pytest.mark.parametrize("tool", list(TOOLS))
def test_an_existing_out_is_refused_then_replaced_with_overwrite_keeping_its_mode(
        tool, run, tmp_path, capsys, monkeypatch):
    out = tmp_path / TOOLS[tool][2]
    out.write_text("someone's file\n")
    out.chmod(0o640)
    outcome = _run_tool(tool, run, out, capsys, monkeypatch)
    assert outcome.code == 2
    assert outcome.line == (f"error: {out} exists; choose another --out, or replace it with "
                            f"--overwrite")
    assert out.read_text() == "someone's file\n"
    outcome = _run_tool(tool, run, out, capsys, monkeypatch, "--overwrite")
    assert outcome.code == 0, outcome
    assert out.read_text() != "someone's file\n" and out.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]  # no temporary left


@pytest.mark.parametrize("tool", list(TOOLS))
def test_a_symbolic_link_out_is_followed_and_stays(tool, run, tmp_path, capsys, monkeypatch):
    name = TOOLS[tool][2]
    target, link = tmp_path / "elsewhere" / name, tmp_path / f"link{Path(name).suffix}"
    target.parent.mkdir()
    link.symlink_to(target)  # a link to a file yet to be written, as `cmd > link` takes it
    outcome = _run_tool(tool, run, link, capsys, monkeypatch)
    assert outcome.code == 0, outcome
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.stat().st_size > 100
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]


def _other_file_system(tmp_path: Path) -> Path:
    """A new folder on a file system other than ``tmp_path``'s (and its parent's)."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK) or \
            os.stat(shm).st_dev in (os.stat(tmp_path).st_dev, os.stat("/dev").st_dev):
        pytest.skip("no tmpfs of its own at /dev/shm")
    return shm


@pytest.mark.parametrize("tool", list(TOOLS))
def test_an_out_on_another_file_system_is_written_there(tool, run, tmp_path, capsys,
                                                        monkeypatch):
    """The page was staged in the parent of --out's folder: /dev/shm/x.html (a tmpfs under
    /dev) failed with 'Invalid cross-device link'."""
    out = _other_file_system(tmp_path) / f"stagezoo-{uuid.uuid4().hex}-{TOOLS[tool][2]}"
    try:
        outcome = _run_tool(tool, run, out, capsys, monkeypatch)
        assert outcome.code == 0, outcome
        assert out.stat().st_size > 100
        assert not [p for p in out.parent.iterdir() if out.name in p.name and p != out]
    finally:
        out.unlink(missing_ok=True)


@pytest.mark.parametrize("names, left", [
    (["plots/time.png"], []),
    (["plots/time.png", "plots/memory.png"], ["plots", "plots/time.png"]),  # file by file
    (["deep/er/table.csv"], []),
])
def test_added_files_are_staged_in_their_folder_and_a_failed_move_leaves_no_folder(
        names, left, tmp_path, monkeypatch):
    """zoo.plot staged in the run's parent folder: a run on a file system of its own failed
    with 'Invalid cross-device link' and left an empty plots/."""
    run_folder = tmp_path / "run"
    run_folder.mkdir()
    (run_folder / "stages.csv").write_text("stage\n")
    moves = []
    real_replace = os.replace

    def replace(source, destination):
        moves.append(Path(source))
        if len(moves) == len(names):  # the last move fails, as a rename across devices did
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        real_replace(source, destination)

    monkeypatch.setattr(writing.os, "replace", replace)
    with pytest.raises(OSError):
        write_files(run_folder, {name: b"png" for name in names})
    assert len(moves) == len(names) and all(run_folder in source.parents for source in moves)
    assert sorted(str(p.relative_to(run_folder)) for p in run_folder.rglob("*")) == sorted(
        ["stages.csv", *left])
    monkeypatch.setattr(writing.os, "replace", real_replace)
    assert write_files(run_folder, {name: b"png" for name in names}) == [
        run_folder / name for name in names]
    assert not [p for p in tmp_path.rglob(".*")]  # no temporary, in the run or beside it


@pytest.mark.parametrize("tool", ["plot", "report"])
def test_a_folder_that_cannot_be_written_is_found_before_the_work(tool, run, capsys,
                                                                  monkeypatch):
    """The run folder itself (zoo.plot's output, zoo.report's default) is read-only: the
    plots and the page were rendered before that was found."""
    from profiling import reports
    from zoo.tools import plot

    access = os.access  # root writes anywhere: the read-only folder is one to os.access
    monkeypatch.setattr(os, "access", lambda path, mode: access(path, mode) and Path(
        path) != run)
    worked = []
    monkeypatch.setattr(reports, "render_plots", lambda *a, **k: worked.append("plots"))
    monkeypatch.setattr(report_module, "report_page", lambda *a, **k: worked.append("page"))
    main = {"plot": plot.main, "report": report.main}[tool]
    outcome = run_main(lambda: main([str(run)]), [], capsys, monkeypatch)
    assert outcome.code == 2 and worked == []
    assert "cannot be written (read-only?)" in outcome.line
