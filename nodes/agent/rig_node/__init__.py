"""What the node agent does on a node, one module per job; standard library only, because this
directory is copied as is onto the lab's boards (the node role) and run in the emulated nodes.

validate   the field types every request is checked against (Refused when one fails)
plan       a node's routing plan: its fields, checks and JSON form (the controller builds it too)
routing    the nodes' routing policy: addresses, one table and rule per interface, MPTCP endpoints
radios     the node's radios from its own configuration, and the checks that keep requests off the management plane
sysctls    the sysctls a request may set
programs   the traffic programs a request may start, and the processes started
forked     the rig's transfer run in a fork of the agent (no new interpreter per program)
sampling   interface counters and TCP sockets sampled during a run, kernel counters
facts      what the node's kernel can run (congestion controls, MPTCP, BPF)
mptcp_info MPTCP sockets: a new one, and a connected one's subflows (tcp_info and addresses)
transfer_sink, transfer_source  the rig transfer's two sides (rig_transfer.py is their command line)
pm_events  the kernel MPTCP path manager's events in this namespace: subflows made and closed
pathpolicy the loss-aware path policy: backup/restore decisions and their MPTCP endpoints
stall      a stalled transfer: its connections' progress, its evidence, its sockets torn down
timeline   a run's events as the node acts them out: interfaces down/up, impairments
ccparams   run-time settings of the rig's BPF congestion controls (the fixed initial ssthresh)
ops        the closed set of requests, dispatched to the modules above
"""

# The version of the agent's requests and replies, in its `hello`. The controller (rig/agents/client.py)
# refuses an agent of another version (a node provisioned from another checkout): raise it when a
# request or a reply changes so that one side of another version would misread the other.
PROTOCOL = 3
