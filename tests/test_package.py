"""The installed package (issue 24): one ``stagezoo`` command, nothing written where it was
not asked, one line naming the extra that a missing optional dependency belongs to, and a
wheel that carries its configs and sample images but no results or test data."""

from __future__ import annotations

import importlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cli_runner import run_main
from profiling.errors import MissingExtra, require_extra

ROOT = Path(__file__).resolve().parents[1]


def test_stagezoo_lists_its_tools_and_refuses_an_unknown_one(capsys, monkeypatch):
    from zoo.__main__ import TOOLS, main

    listed = run_main(main, ["--help"], capsys, monkeypatch, program="stagezoo")
    assert listed.code == 0
    assert [line.split()[0] for line in listed.stdout.splitlines()[4:4 + len(TOOLS)]] == \
        ["calibrate", "collect", "compare", "list", "plot", "profile", "report", "serve",
         "split"]
    unknown = run_main(main, ["profiel"], capsys, monkeypatch, program="stagezoo")
    assert unknown.code == 2
    assert unknown.line == ("error: unknown tool 'profiel'; choose one of: calibrate, collect, "
                            "compare, list, plot, profile, report, serve, split (see stagezoo "
                            "--help)")
    assert run_main(main, [], capsys, monkeypatch, program="stagezoo").line.startswith(
        "error: no tool given; choose one of: calibrate,")


def test_stagezoo_passes_the_rest_of_the_line_to_the_tool(capsys, monkeypatch):
    from zoo.__main__ import main

    outcome = run_main(lambda: main(["plot", "--help"]), [], capsys, monkeypatch)
    assert outcome.code == 0
    assert "PNG plots of a run or a split analysis." in outcome.stdout


@pytest.mark.parametrize("tool", ["split", "serve", "compare", "collect", "plot", "calibrate",
                                  "report", "list"])
def test_a_usage_error_names_the_tool_as_it_was_called(tool, capsys, monkeypatch):
    from zoo.__main__ import main

    outcome = run_main(lambda: main([tool, "--no-such-flag"]), [], capsys, monkeypatch)
    assert outcome.code == 2
    assert outcome.stderr.strip().endswith(f"(see stagezoo {tool} --help)"), outcome.stderr
    direct = run_main(importlib.import_module(f"zoo.{tool}").main, ["--no-such-flag"], capsys,
                      monkeypatch, program=f"/somewhere/zoo/{tool}.py")
    assert direct.stderr.strip().endswith(f"(see python -m zoo.{tool} --help)"), direct.stderr


@pytest.mark.parametrize("tool", ["profile", "split", "compare", "collect", "plot", "calibrate",
                                  "report", "list"])
def test_help_writes_nothing(tool, tmp_path, capsys, monkeypatch):
    from zoo.__main__ import main

    monkeypatch.chdir(tmp_path)
    outcome = run_main(lambda: main([tool, "--help"]), [], capsys, monkeypatch)
    assert outcome.code == 0 and outcome.stdout
    assert list(tmp_path.iterdir()) == []


def test_the_command_is_recorded_as_typed_through_stagezoo(monkeypatch):
    from profiling.reports.metadata import typed_command

    monkeypatch.setattr(sys, "argv", ["stagezoo profile", "model=gmflow", "input.size=[64,96]"])
    monkeypatch.setitem(sys.modules, "__main__", type(sys)("__main__"))
    assert typed_command() == "stagezoo profile model=gmflow 'input.size=[64,96]'"


def test_require_extra_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    with pytest.raises(MissingExtra) as missing:
        require_extra("matplotlib", "plots", "zoo.plot")
    assert str(missing.value) == ("zoo.plot needs matplotlib, which is not installed; install it "
                                  "with pip install 'stagezoo[plots]'")
    assert require_extra("json", "none", "a test").dumps([1]) == "[1]"


def test_zoo_plot_without_matplotlib_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    from zoo.tools.plot import main

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    outcome = run_main(main, [str(tmp_path)], capsys, monkeypatch)
    assert outcome.code == 2
    assert outcome.line == ("error: zoo.plot needs matplotlib, which is not installed; install "
                            "it with pip install 'stagezoo[plots]'")


def test_plots_true_without_matplotlib_fails_before_any_run_folder(tmp_path, capsys,
                                                                     monkeypatch):
    from zoo.tools.profile import main

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    outcome = run_main(main, ["model=torchvision", "model.arch=resnet18", "device=meta",
                              "plots=true", f"hydra.run.dir={tmp_path / 'run'}"],
                       capsys, monkeypatch)
    assert outcome.code == 2
    assert outcome.line.endswith("plots=true needs matplotlib, which is not installed; install "
                                 "it with pip install 'stagezoo[plots]'")
    assert not (tmp_path / "run").exists()


def test_a_sweep_launcher_without_its_plugin_names_the_sweeps_extra(tmp_path, capsys,
                                                                      monkeypatch):
    from zoo.tools.profile import main

    monkeypatch.setitem(sys.modules, "hydra_plugins.hydra_joblib_launcher", None)
    outcome = run_main(main, ["-m", "hydra/launcher=local", "device=meta",
                              f"hydra.sweep.dir={tmp_path / 'sweep'}"], capsys, monkeypatch)
    assert outcome.code == 2
    assert outcome.line == ("error: hydra/launcher=local needs "
                            "hydra_plugins.hydra_joblib_launcher, which is not installed; "
                            "install it with pip install 'stagezoo[sweeps]'")


def test_the_zstd_codec_without_zstandard_names_its_extra(monkeypatch):
    from profiling.split import check_codecs

    monkeypatch.setitem(sys.modules, "zstandard", None)
    with pytest.raises(MissingExtra, match=r"stagezoo\[zstd\]"):
        check_codecs(["zlib", "zstd"])


def test_failure_logs_go_to_the_users_state_folder(tmp_path, monkeypatch):
    from zoo.tools.cli import log_directory, user_log_directory

    monkeypatch.delenv("ZOO_LOG_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    assert user_log_directory() == tmp_path / "state" / "stagezoo" / "logs"
    assert log_directory() == tmp_path / "state" / "stagezoo" / "logs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state"]


@pytest.mark.slow
def test_the_wheel_holds_the_package_data_and_nothing_else(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps",
                    "--no-build-isolation", "-q", "-w", str(tmp_path)],
                   check=True, cwd=tmp_path, timeout=300)
    wheel = next(tmp_path.glob("stagezoo-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"zoo", "profiling", wheel.name.split("-py3")[0] + ".dist-info"}
    configs = {p.relative_to(ROOT / "configs").as_posix() for p in (ROOT / "configs").rglob("*.yaml")}
    assert {n[len("zoo/configs/"):] for n in names if n.startswith("zoo/configs/")} == configs
    assert "zoo/configs/hydra/help/zoo.yaml" in names
    assert {"zoo/inputs/sample/chelsea_0.png", "zoo/inputs/sample/coffee.jpg"} <= set(names)
    assert not [n for n in names if "py.typed" in n or "hydra_plugins" in n or "tests/" in n
                or "results/" in n or "__pycache__" in n]
    entry_points = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "stagezoo = zoo.__main__:main" in entry_points
    assert wheel.stat().st_size < 5e6
