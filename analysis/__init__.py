"""Dataset loading, statistics and figures for campaigns of the rig (campaign dirs or exports)."""
