"""The campaign directory on disk: writing runs, the formats and their versions."""
