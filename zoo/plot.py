"""``python -m zoo.plot``, kept short: the tool is :mod:`zoo.tools.plot`."""

from zoo.tools.plot import main

if __name__ == "__main__":
    main()
