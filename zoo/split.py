"""``python -m zoo.split``, kept short: the tool is :mod:`zoo.tools.split`."""

from zoo.tools.split import main

if __name__ == "__main__":
    main()
