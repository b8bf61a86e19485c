"""Operating the rig: nightly campaigns, the host's and the lab's doctor, the programs the rig needs, routing plans by hand."""
