// SPDX-License-Identifier: GPL-2.0
/*
 * Uncoupled Reno ("rig_reno"): every socket, and every MPTCP subflow on its own, runs Reno, as
 * the kernel's reno does, but from the same code as lia/olia/balia, so that it honours the rig's
 * fixed initial ssthresh and has the same runaway-window repair. No bound on unsent data: that
 * applies to coupled subflows only.
 */
#define CC_UNCOUPLED
#define CC_INCREASE(snap) 0
#define CC_SSTHRESH(sk, snap) tcp_reno_ssthresh(sk)
#include "coupled.bpf.h"

COUPLED_OPS(rig_rig_reno, "rig_reno");
