"""``python -m zoo.serve``, kept short: the tool is :mod:`zoo.tools.serve`."""

from zoo.tools.serve import main

if __name__ == "__main__":
    main()
