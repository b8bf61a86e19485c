"""Reaching the node agents: the client the runs talk to, and the transports (network namespaces, SSH, local)."""
