"""linewatch: edge and industrial inference pipeline (shared core: settings, contract, CLI)."""

__version__ = "0.1.0"
