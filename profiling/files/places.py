"""The per-user folders this tool (and the libraries it loads) keep files in, found as the
XDG Base Directory rule says.

``$XDG_CACHE_HOME`` and ``$XDG_STATE_HOME`` count only when they hold an absolute path: the
rule says to ignore a relative one, and an empty one means "unset". Otherwise the folder is
``~/.cache`` or ``~/.local/state``, where ``~`` is ``$HOME`` when that is an absolute path, else
the account's home folder from the password database (``HOME=`` or ``HOME=.`` would put a
46 MB export cache in ``/.cache`` or in whatever folder the command ran in).
:func:`settle_user_folders` applies the same rule to the process environment, so that the
libraries a tool loads (torch, ONNX Runtime, OpenVINO, matplotlib) read it too.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Optional

__all__ = ["home_folder", "user_folder", "absolute_variable", "settle_user_folders",
           "USER_FOLDER_VARIABLES"]

#: The XDG variables and their defaults below the home folder.
USER_FOLDER_VARIABLES = {"XDG_CACHE_HOME": ".cache", "XDG_STATE_HOME": ".local/state",
                         "XDG_CONFIG_HOME": ".config", "XDG_DATA_HOME": ".local/share"}


def absolute_variable(name: str) -> Optional[Path]:
    """The environment variable ``name`` as a folder, or ``None`` when it is unset, empty or
    relative (the XDG rule: a relative path is ignored)."""
    value = os.environ.get(name, "")
    return Path(value) if value and os.path.isabs(value) else None


def home_folder() -> Path:
    """``$HOME`` when it is an absolute path, else the account's home folder (the password
    database), else the system's temporary folder; never the working folder or ``/``."""
    given = absolute_variable("HOME")
    if given is not None:
        return given
    try:
        import pwd

        account = pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError, OSError):
        account = ""
    return Path(account) if account and os.path.isabs(account) and account != "/" else \
        Path(tempfile.gettempdir())


def user_folder(variable: str) -> Path:
    """The folder one of :data:`USER_FOLDER_VARIABLES` names: its value when absolute, else its
    default below :func:`home_folder` (``XDG_CACHE_HOME``: ``~/.cache``)."""
    return absolute_variable(variable) or home_folder() / USER_FOLDER_VARIABLES[variable]


def settle_user_folders(extra: tuple[str, ...] = ()) -> list[str]:
    """Make the process environment follow the rule: an empty or relative ``$HOME`` becomes
    :func:`home_folder`, and each empty or relative XDG variable (and each of ``extra``, such
    as ``ZOO_LOG_DIR``) is removed, so that nothing the process loads writes into the working
    folder or ``/``. Return the names changed."""
    changed = []
    if absolute_variable("HOME") is None:
        os.environ["HOME"] = str(home_folder())
        changed.append("HOME")
    for name in (*USER_FOLDER_VARIABLES, *extra):
        if name in os.environ and absolute_variable(name) is None:
            del os.environ[name]
            changed.append(name)
    return changed
