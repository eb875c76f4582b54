"""Ingestion stage: decoders, validation, features (pure Python) and the Flink job that runs them."""
