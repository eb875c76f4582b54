"""Model side of linewatch: teachers, students, distillation, ONNX export, INT8 quantization,
the model registry and the default shipped models.

Importing :mod:`models` is cheap (no torch): runtimes and services only need
:class:`models.registry.ModelRegistry`, which reads model cards and file paths.
Training lives in :mod:`models.training` (needs the ``train`` extra).
"""
