"""Supervision of the embedded ingestion job (docs/supervision.md), one module per concern:

=================  =========================================================================
``lifeline``       the job dies with its supervisor: ``PR_SET_PDEATHSIG`` and a liveness pipe
``lock``           one ingest per landing zone (and per run directory): ``flock`` with the
                   holder's PID and host in the file
``lease``          the same across hosts (NFS): a Redis lease ``<prefix>:ingest:lease:<zone>``
``tempdirs``       a temp directory per run under the data dir; stale ones removed, total bounded
``health``         ``linewatch ingest --health``: lock held, probe answered recently
=================  =========================================================================
"""
