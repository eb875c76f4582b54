"""The stream contract shared by every stage: names, message schemas, array encoding.

See docs/streams.md.
"""

from linewatch.contract.arrays import ArraySpec, decode_array, encode_array
from linewatch.contract.messages import (
    Alert,
    AlertRequest,
    AlertSeverity,
    AudioFeatures,
    ContractError,
    DeadLetter,
    DeadLetterReason,
    Feedback,
    MalformedMessageError,
    Message,
    MESSAGE_TYPES,
    ModelRef,
    PlcFeatures,
    Prediction,
    ThermalFeatures,
    UnknownSchemaError,
    Verdict,
    decode_message,
    encode_message,
)
from linewatch.contract.streams import ConsumerGroup, Modality, StreamNames, shard_of

__all__ = [
    "Alert", "AlertRequest", "AlertSeverity", "ArraySpec", "AudioFeatures", "ConsumerGroup", "ContractError", "DeadLetter",
    "DeadLetterReason", "Feedback", "MESSAGE_TYPES", "MalformedMessageError", "Message", "ModelRef", "Modality", "PlcFeatures",
    "Prediction", "StreamNames", "ThermalFeatures", "UnknownSchemaError", "Verdict", "decode_array",
    "decode_message", "encode_array", "encode_message", "shard_of",
]
