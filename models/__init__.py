"""Model settings -> local paths: the registry of models that come inside pip packages.

Imports nothing of the project, so speech/ and robot/ can both use it."""

from models.registry import EMBEDDED, EMBEDDED_PREFIX, KINDS, ModelNotFound, embedded_names, resolve_model_path

__all__ = ["EMBEDDED", "EMBEDDED_PREFIX", "KINDS", "ModelNotFound", "embedded_names", "resolve_model_path"]
