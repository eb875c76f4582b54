"""The landing zone (docs/ingestion.md, "The landing-zone contract"), one module per concern:

==========================  ===================================================================
``contract``                the manifest line: :func:`parse_manifest_line` (the one parser),
                            :class:`ManifestEntry`, kinds and sequences
``zone``                    path policy (:class:`LandingZone`: where a line may point, the
                            archive) and :func:`read_blob` (size cap, length, SHA-256)
``index``                   :class:`ManifestIndex`: what the manifests in the directory announce
``janitor``                 :class:`Janitor`: archives finished manifests after checkpoints
``checkpoints``             Flink's checkpoint directory layout, as the janitor reads it
``housekeeping``            :class:`Housekeeper`: the thread that runs index, janitor and pruning
``gateway``                 :class:`ManifestWriter` and helpers: the gateway side (tests, bench)
==========================  ===================================================================
"""

from pipeline.landing.checkpoints import CheckpointProgress, checkpoint_progress
from pipeline.landing.contract import (
    HIDDEN_PREFIXES,
    KIND_BY_DIR,
    KINDS,
    MODALITY_OF_KIND,
    ManifestEntry,
    ManifestError,
    ManifestLine,
    Probe,
    format_time_ms,
    kind_of_path,
    line_ref,
    manifest_asset,
    parse_manifest_line,
    read_manifest,
)
from pipeline.landing.gateway import (
    STAGING_DIR,
    ManifestWriter,
    atomic_write,
    blob_identity,
    existing_entry,
    iter_manifest_lines,
    parse_file_stamp,
    publish_existing,
)
from pipeline.landing.housekeeping import Housekeeper
from pipeline.landing.index import LineLocation, ManifestIndex
from pipeline.landing.janitor import Janitor
from pipeline.landing.zone import LandingZone, archive_bucket, read_blob

__all__ = [
    "HIDDEN_PREFIXES", "KINDS", "KIND_BY_DIR", "MODALITY_OF_KIND", "STAGING_DIR", "CheckpointProgress", "Housekeeper",
    "Janitor", "LandingZone", "LineLocation", "ManifestEntry", "ManifestError", "ManifestIndex", "ManifestLine",
    "ManifestWriter", "Probe", "archive_bucket", "atomic_write", "blob_identity", "checkpoint_progress",
    "existing_entry", "format_time_ms", "iter_manifest_lines", "kind_of_path", "line_ref", "manifest_asset",
    "parse_file_stamp", "parse_manifest_line", "publish_existing", "read_blob", "read_manifest",
]
