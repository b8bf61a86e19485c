// SPDX-License-Identifier: GPL-2.0
/* LIA, RFC 6356: linked increases; on loss halve the subflow's window like Reno. */
#define CC_INCREASE(snap) lia_increase(snap)
#define CC_SSTHRESH(sk, snap) tcp_reno_ssthresh(sk)
#include "coupled.bpf.h"

COUPLED_OPS(rig_lia, "lia");
