"""The options room: every app option declared once (:mod:`.declared`: key, type, default,
help), strict types for every option (:mod:`.schema`), the checks of what a user typed
(overrides, YAML booleans, plain configs) and :class:`ConfigError`, the one error that bad
input raises. It imports neither torch nor Hydra, so bad options are answered at once.

The ground floor of ``zoo/``: every other room may import it; it imports none of them.
"""

from .declared import (DEVICE_OPTIONS, MODEL_OPTIONS, NULL_DEFAULT_OPTIONS, OPTIONS, SCHEMA,
                       Option, check_config, option_defaults, options_help)
from .errors import ConfigError
from .schema import (Anything, Boolean, Choice, Integer, ListOf, Nullable, Number, as_checker,
                     check_minimum, check_value, checker_for_annotation, suggest)
from .user_values import (MODEL_TARGET, check_hydra_section, check_override,
                          check_plain_config, check_yaml_booleans)

__all__ = ["ConfigError", "NULL_DEFAULT_OPTIONS", "SCHEMA", "OPTIONS", "DEVICE_OPTIONS",
           "MODEL_OPTIONS", "MODEL_TARGET", "Option",
           "option_defaults", "options_help", "Anything", "Boolean", "Choice",
           "Integer", "ListOf", "Nullable", "Number", "as_checker", "check_config",
           "check_minimum", "check_value", "checker_for_annotation", "suggest",
           "check_hydra_section", "check_override", "check_plain_config", "check_yaml_booleans"]
