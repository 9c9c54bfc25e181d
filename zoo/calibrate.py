"""``python -m zoo.calibrate``, kept short: the tool is :mod:`zoo.tools.calibrate`."""

from zoo.tools.calibrate import main

if __name__ == "__main__":
    main()
