"""The ``linewatch`` command line (Typer + Rich)."""
