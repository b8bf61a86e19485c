// SPDX-License-Identifier: GPL-2.0
/* BALIA, Peng et al.: balanced linked adaptation; decrease by w/2 * min(alpha, 1.5). */
#define CC_INCREASE(snap) balia_increase(snap)
#define CC_SSTHRESH(sk, snap) balia_ssthresh(snap)
#include "coupled.bpf.h"

COUPLED_OPS(rig_balia, "balia");
