"""Configuration: YAML files (defaults, personas, scenarios) and the schema that validates them."""

from config.loader import ConfigError, load_persona, load_scenario, load_settings

__all__ = ["ConfigError", "load_persona", "load_scenario", "load_settings"]
