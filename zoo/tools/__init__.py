"""The command-line tools, one module each, registered by ``@register_tool`` on their ``main``
(:mod:`.registry`) and each run with ``python -m zoo.NAME`` (or ``python -m zoo.tools.NAME``,
or ``stagezoo NAME``): ``calibrate``, ``collect``, ``compare``, ``list``, ``plot``,
``profile``, ``report`` and ``split``. Beside them: :mod:`.cli` (the
error contract and config composition every tool shares), :mod:`.job` (a composed config through
:mod:`.job_description`, :mod:`.job_runner`, :mod:`.job_writer` and :mod:`.job_printer`,
callable from Python and tests), and the
helpers of one tool each."""

from .working_folder import check_working_folder

check_working_folder()  # before a tool imports torch, which dies in a deleted folder
