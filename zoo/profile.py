"""``python -m zoo.profile``, kept short: the tool is :mod:`zoo.tools.profile`."""

from zoo.tools.profile import main

if __name__ == "__main__":
    main()
