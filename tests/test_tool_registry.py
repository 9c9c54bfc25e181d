"""The tool registry (zoo/tools/registry.py): every tool is registered by ``@register_tool``
on its ``main``, and every registered tool keeps the command-line contract: ``--help`` exits 0
at once and names the command as called, a bad option exits 2 with one line, and its shim
``zoo/NAME.py`` is the one :func:`shim_source` writes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from cli_runner import run_main
from zoo.__main__ import main as stagezoo
from zoo.tools.registry import register_tool, registered_tools, shim_source

ROOT = Path(__file__).resolve().parents[1]
TOOLS = registered_tools()


def test_the_registry_finds_every_tool_module():
    assert list(TOOLS) == ["calibrate", "collect", "compare", "list", "plot", "profile",
                           "report", "serve", "split"]
    assert {name: tool.module for name, tool in TOOLS.items()} == {
        name: f"zoo.tools.{name}" for name in TOOLS}


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_a_tools_help_exits_0_at_once_and_names_the_command(name, capsys, monkeypatch):
    started = time.perf_counter()
    outcome = run_main(lambda: stagezoo([name, "--help"]), [], capsys, monkeypatch)
    assert outcome.code == 0 and outcome.stderr == ""
    assert f"stagezoo {name}" in outcome.stdout
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_a_tools_bad_option_exits_2_with_one_line(name, capsys, monkeypatch):
    outcome = run_main(lambda: stagezoo([name, "--no-such-option"]), [], capsys, monkeypatch)
    assert outcome.code == 2
    assert outcome.line.endswith(f"(see stagezoo {name} --help)")


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_each_tool_has_the_shim_that_python_m_runs(name):
    assert (ROOT / "zoo" / f"{name}.py").read_text() == shim_source(name)


def test_a_name_registered_by_two_functions_is_refused(monkeypatch):
    import zoo.tools.registry

    monkeypatch.setattr(zoo.tools.registry, "_TOOLS", dict(zoo.tools.registry._TOOLS))
    def main() -> None:
        """A tool of the test."""

    register_tool("test_tool_twice", "a test")(main)
    register_tool("test_tool_twice", "a test")(main)  # the same function again: accepted

    def other() -> None:
        """Another function under the same name."""

    with pytest.raises(RuntimeError, match="tool 'test_tool_twice' is registered twice"):
        register_tool("test_tool_twice", "a test")(other)


def test_stagezoo_returns_no_tool_result_as_its_exit_status(tmp_path, monkeypatch, capsys):
    """The console script runs ``sys.exit(main())``: a tool's returned object (calibrate's
    Ceilings) printed its repr and exited 1 after a successful run."""
    from zoo.__main__ import main

    monkeypatch.chdir(tmp_path)
    assert main(["calibrate", "--seconds", "0.05", "--size", "64", "--megabytes", "1"]) is None
    assert "copy bandwidth" in capsys.readouterr().out
