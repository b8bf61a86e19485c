"""The emulated rig: network namespaces with real kernel MPTCP, and real-time radio emulators."""
