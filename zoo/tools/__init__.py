"""The command-line tools, one module each, each run with ``python -m zoo.NAME`` (or
``python -m zoo.tools.NAME``, or ``stagezoo NAME``): ``profile``, ``split``, ``compare``,
``collect``, ``plot``, ``calibrate``, ``report`` and ``list``. Beside them: :mod:`.cli` (the
error contract and config composition every tool shares), :mod:`.job` (a composed config to a
model, its inputs, its deployment and a profile, callable from Python and tests), and the
helpers of one tool each."""

from .working_folder import check_working_folder

check_working_folder()  # before a tool imports torch, which dies in a deleted folder
