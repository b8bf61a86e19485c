"""Dataset export: a campaign directory to Parquet tables with a Frictionless descriptor and checksums."""

from rig.export.bundle import export_campaign, verify

__all__ = ["export_campaign", "verify"]
