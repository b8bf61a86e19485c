// SPDX-License-Identifier: GPL-2.0
/* OLIA, Khalili et al.: opportunistic linked increases; on loss halve like Reno. */
#define CC_INCREASE(snap) olia_increase(snap)
#define CC_SSTHRESH(sk, snap) tcp_reno_ssthresh(sk)
#include "coupled.bpf.h"

COUPLED_OPS(rig_olia, "olia");
