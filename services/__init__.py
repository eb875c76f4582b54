"""Stage 3: FIFO microservices on Redis Streams consumer groups (docs/services.md).

- ``services.inference``: features -> predictions (micro-batched, ONNX Runtime / Triton / TensorRT).
- ``services.fusion``: predictions -> per-asset verdicts (event-time join, hysteresis).
- ``services.alerts``: verdicts and AlertRequests -> alerts (ISA-18.2 states, flood grouping),
  MQTT, webhooks, operator actions (``AlertStore``) and the HTTP API.
"""
