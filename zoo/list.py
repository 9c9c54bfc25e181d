"""``python -m zoo.list``, kept short: the tool is :mod:`zoo.tools.list`."""

from zoo.tools.list import main

if __name__ == "__main__":
    main()
