"""Tests of the simulated factory (linewatch.simulator)."""
