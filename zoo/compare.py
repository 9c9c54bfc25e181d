"""``python -m zoo.compare``, kept short: the tool is :mod:`zoo.tools.compare`."""

from zoo.tools.compare import main

if __name__ == "__main__":
    main()
