"""``python -m zoo.report``, kept short: the tool is :mod:`zoo.tools.report`."""

from zoo.tools.report import main

if __name__ == "__main__":
    main()
