"""The rejection validators return: a record that decoded but must not go downstream."""

from __future__ import annotations

from pipeline.decoders.errors import RejectedInput


class InvalidRecord(RejectedInput):
    """A decoded record that fails a check (unknown asset, out of range, late, duplicate...).

    Validators *return* it (or None) rather than raising, so a loop over many records needs no
    try/except; ``raise`` it where an exception fits better.
    """
