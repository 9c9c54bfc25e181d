"""Relative or empty ``XDG_CACHE_HOME``, ``XDG_STATE_HOME``, ``ZOO_LOG_DIR`` and ``HOME`` are
ignored as the XDG rule says, so nothing lands in the working folder or in ``/``
(:mod:`profiling.files.places`, docs/trust.md)."""

import os
import pwd
from pathlib import Path

import pytest

from profiling.files import home_folder, settle_user_folders, user_folder
from zoo.tools.cli import log_directory, run_tool

ACCOUNT_HOME = Path(pwd.getpwuid(os.getuid()).pw_dir)
VARIABLES = ["XDG_CACHE_HOME", "XDG_STATE_HOME", "ZOO_LOG_DIR", "HOME"]


@pytest.fixture
def work(tmp_path, monkeypatch):
    """An empty working folder, a home of its own and no user folders set."""
    for name in ("XDG_CACHE_HOME", "XDG_STATE_HOME", "ZOO_LOG_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path


def _failure_log(capsys) -> Path:
    def failing():
        raise RuntimeError("boom")

    with pytest.raises(SystemExit) as done:
        run_tool("zoo.test", failing)
    assert done.value.code == 1
    line = capsys.readouterr().err.strip()
    return Path(line.split("(traceback in ")[1].rstrip(")"))


@pytest.mark.parametrize("value", ["", "relative/folder", "."])
@pytest.mark.parametrize("name", VARIABLES)
def test_a_relative_or_empty_user_folder_is_ignored(name, value, work, monkeypatch, capsys):
    if name == "HOME":  # the fallback is the account's home: keep the logs out of it
        monkeypatch.setenv("XDG_STATE_HOME", str(work / "state"))
    monkeypatch.setenv(name, value)
    expected_home = ACCOUNT_HOME if name == "HOME" else work / "home"
    assert home_folder() == expected_home
    assert user_folder("XDG_CACHE_HOME") == expected_home / ".cache"
    assert user_folder("XDG_STATE_HOME") == (
        work / "state" if name == "HOME" else expected_home / ".local" / "state")
    logs = user_folder("XDG_STATE_HOME") / "stagezoo" / "logs"
    assert log_directory() == logs
    assert _failure_log(capsys).parent == logs
    assert os.environ.get(name, str(expected_home)) == str(expected_home)  # settled
    assert list((work / "work").iterdir()) == []


def test_the_cli_settles_the_environment_for_the_libraries_it_loads(work, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", "cache")
    monkeypatch.setenv("XDG_CONFIG_HOME", "")
    monkeypatch.setenv("HOME", "")
    monkeypatch.setenv("ZOO_LOG_DIR", str(work / "logs"))
    assert sorted(settle_user_folders(extra=("ZOO_LOG_DIR",))) == [
        "HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"]
    assert os.environ["HOME"] == str(ACCOUNT_HOME) and os.environ["ZOO_LOG_DIR"] == str(
        work / "logs")
    assert "XDG_CACHE_HOME" not in os.environ and Path("~").expanduser() == ACCOUNT_HOME
    assert settle_user_folders() == []


def test_absolute_user_folders_are_used_as_given(work, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(work / "c"))
    monkeypatch.setenv("ZOO_LOG_DIR", str(work / "logs"))
    assert user_folder("XDG_CACHE_HOME") == work / "c"
    assert log_directory() == work / "logs"


@pytest.mark.parametrize("value", ["", "relative/folder", "."])
def test_the_export_cache_from_python_ignores_a_relative_or_empty_cache_home(value, work,
                                                                              monkeypatch):
    """A Python caller (no tool settled the environment) gets the same rule."""
    from profiling.runtimes import default_cache_folder

    monkeypatch.setenv("XDG_CACHE_HOME", value)
    assert default_cache_folder() == work / "home" / ".cache" / "stagezoo" / "exports"
    monkeypatch.setenv("XDG_CACHE_HOME", str(work / "cache"))
    assert default_cache_folder() == work / "cache" / "stagezoo" / "exports"
