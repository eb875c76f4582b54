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
    DriftFeature,
    DriftSkipped,
    DriftReport,
    Explanation,
    FeatureWeight,
    Feedback,
    MalformedMessageError,
    Message,
    MESSAGE_TYPES,
    ModalityExplanation,
    ModelRef,
    PlcFeatures,
    Prediction,
    RuleHit,
    ThermalFeatures,
    UnknownSchemaError,
    Verdict,
    decode_message,
    encode_message,
)
from linewatch.contract.streams import ConsumerGroup, Modality, StreamNames, hash_tag, shard_of

__all__ = [
    "Alert", "AlertRequest", "AlertSeverity", "ArraySpec", "AudioFeatures", "ConsumerGroup", "ContractError", "DeadLetter",
    "DeadLetterReason", "DriftFeature", "DriftSkipped", "DriftReport", "Explanation", "FeatureWeight", "Feedback", "MESSAGE_TYPES", "MalformedMessageError", "Message", "ModalityExplanation", "ModelRef", "Modality", "PlcFeatures",
    "Prediction", "RuleHit", "StreamNames", "ThermalFeatures", "UnknownSchemaError", "Verdict", "decode_array",
    "decode_message", "encode_array", "encode_message", "hash_tag", "shard_of",
]
