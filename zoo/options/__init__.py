"""The options room: strict types for every option, the app's schema, the checks of what a
user typed (overrides, YAML booleans, plain configs) and :class:`ConfigError`, the one error
that bad input raises. It imports neither torch nor Hydra, so bad options are answered at once.

The ground floor of ``zoo/``: every other room may import it; it imports none of them.
"""

from .errors import ConfigError
from .schema import (NULL_DEFAULT_OPTIONS, SCHEMA, Anything, Boolean, Choice, Integer, ListOf,
                     Nullable, Number, as_checker, check_config, check_minimum, check_value,
                     checker_for_annotation, suggest)
from .user_values import (check_hydra_section, check_override, check_plain_config,
                          check_yaml_booleans)

__all__ = ["ConfigError", "NULL_DEFAULT_OPTIONS", "SCHEMA", "Anything", "Boolean", "Choice",
           "Integer", "ListOf", "Nullable", "Number", "as_checker", "check_config",
           "check_minimum", "check_value", "checker_for_annotation", "suggest",
           "check_hydra_section", "check_override", "check_plain_config", "check_yaml_booleans"]
