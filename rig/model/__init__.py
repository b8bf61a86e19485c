"""The rig's typed models: campaign and run specs, topology and address plan, radio profiles, routing plans, rate traces."""
