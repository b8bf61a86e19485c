"""The MPTCP LTE + WiFi lab rig: campaign engine, emulated rig, collectors and datasets."""

__version__ = "0.1.0"
