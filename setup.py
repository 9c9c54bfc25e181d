"""The packages of the wheel: zoo and profiling, and the top-level configs/ as zoo.configs.

The Hydra configs stay at the top of the checkout (where users and docs look for them) and ship
inside the package, so that an installed tool finds them from any folder
(zoo.tools.cli.CONFIG_DIR). Folders of data (configs/device/, zoo/inputs/sample/) are listed as
packages too, as setuptools asks. Everything else is in pyproject.toml.
"""

from setuptools import find_namespace_packages, setup

_SKIP = ["*__pycache__*"]
_CONFIGS = find_namespace_packages(where="configs", exclude=_SKIP)

setup(packages=[*find_namespace_packages(include=["zoo", "zoo.*", "profiling", "profiling.*"],
                                         exclude=_SKIP),
                "zoo.configs", *(f"zoo.configs.{name}" for name in _CONFIGS)],
      package_dir={"zoo.configs": "configs"})
