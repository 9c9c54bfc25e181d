"""``python -m zoo.collect``, kept short: the tool is :mod:`zoo.tools.collect`."""

from zoo.tools.collect import main

if __name__ == "__main__":
    main()
