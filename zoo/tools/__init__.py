"""The command-line tools, one module each, each run with ``python -m zoo.NAME`` (or
``python -m zoo.tools.NAME``, or ``stagezoo NAME``): ``profile``, ``split``, ``compare``,
``collect``, ``plot``, ``calibrate``, ``report`` and ``list``. Beside them: :mod:`.cli` (the
error contract and config composition every tool shares), :mod:`.job` (a composed config through
:mod:`.job_description`, :mod:`.job_runner`, :mod:`.job_writer` and :mod:`.job_printer`,
callable from Python and tests), and the
helpers of one tool each."""
