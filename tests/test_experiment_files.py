"""Experiment files (zoo/tools/experiment_files.py): a value of the wrong type names the file, and
a file without the ``# @package _global_`` header is refused instead of setting nothing."""

from __future__ import annotations

import pytest

from zoo.options import ConfigError
from zoo.tools.composition import check_overrides
from zoo.tools.experiment_files import check_experiment_file


@pytest.mark.parametrize("content, expected", [
    ("# @package _global_\nrun:\n  repeats: {a: 1}\n", "run.repeats={'a': 1} is not accepted"),
    ("# @package _global_\ninput:\n  size: {h: 1, w: 2}\n", "input.size={'h': 1, 'w': 2} is not"),
    ("# @package _global_\nrun:\n  warmup: [1, 2]\n", "run.warmup=[1, 2] is not accepted"),
    ("- just\n- a list\n", "holds list, not a mapping of options"),
])
def test_an_experiment_file_with_a_value_of_the_wrong_type_names_the_file(tmp_path, content,
                                                                          expected):
    path = tmp_path / "mine.yaml"
    path.write_text(content)
    with pytest.raises(ConfigError, match=expected.replace("[", r"\[").replace("]", r"\]")
                       .replace("{", r"\{").replace("}", r"\}")) as raised:
        check_experiment_file(path)
    assert f"experiment file {path}" in str(raised.value)


@pytest.mark.parametrize("text", ["", "run:\n  repeats: 3\n", "# @package model\nrun:\n  seed: 1\n",
                                  "# a comment\nrun:\n  seed: 1\n# @package _global_\n"])
def test_an_experiment_without_the_global_header_is_refused(tmp_path, text):
    """Without ``# @package _global_`` Hydra put the file's options under ``experiment.*``;
    before, the run was refused as "unknown option 'experiment'" (an empty file) or the
    options were silently not set."""
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "mine.yaml").write_text(text)
    problem = check_overrides(["model=swiftnet", f"hydra.searchpath=[file://{tmp_path}]",
                               "experiment=mine"])
    assert problem == (f"experiment file {tmp_path / 'experiment' / 'mine.yaml'} does not begin "
                       f"with the line '# @package _global_'; without it Hydra puts its options "
                       f"under experiment.* instead of setting them (see the shipped "
                       f"configs/experiment/*.yaml)")
    (tmp_path / "experiment" / "mine.yaml").write_text("# @package _global_\n" + text
                                                         if text.startswith("run") else
                                                         "# @package _global_\n")
    assert check_overrides(["model=swiftnet", f"hydra.searchpath=[file://{tmp_path}]",
                            "experiment=mine"]) is None
