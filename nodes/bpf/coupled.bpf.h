/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Plumbing shared by the rig's congestion controls (coupled lia, olia, balia; uncoupled rig_reno).
 *
 * Each subflow of an MPTCP connection publishes its cwnd, rtt and OLIA inter-loss
 * distance in one slot of a per-connection entry of `conns`, keyed by the address of
 * the MPTCP socket (reached through the subflow context in icsk_ulp_data). On every
 * ACK a subflow reads all slots of its connection and applies its algorithm's increase.
 * A socket that is not MPTCP behaves as Reno. Slots are freed by the release op; the
 * last subflow to leave deletes the entry.
 *
 * An algorithm file defines CC_INCREASE(snap) and CC_SSTHRESH(sk, snap) (snap: a
 * struct cc_paths of at least two paths) and then includes this file. Defining
 * CC_UNCOUPLED instead makes every socket, also each MPTCP subflow, run Reno on its own.
 *
 * Every CC built from this file starts a connection at the initial ssthresh set for its
 * network namespace in `init_ssthresh` (see coupled_init), if one is set.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "coupled_math.h"

char _license[] SEC("license") = "GPL";

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

#define TCP_CA_RECOVERY_STATE 3 /* enum tcp_ca_state: TCP_CA_Recovery */
#define TCP_INFINITE_SSTHRESH 0x7fffffff
#define SOL_TCP 6
#define TCP_NOTSENT_LOWAT 25

/* Windows this object found implausible and repaired (see coupled_in_ack_event). */
__u64 repairs;

struct slot {
	__u64 sk; /* owner subflow socket address, 0 = free */
	__u32 cwnd;
	__u32 rtt_us;
	__u64 ell;
};

struct conn {
	struct slot slots[CC_MAX_PATHS];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct conn);
} conns SEC(".maps");

/*
 * Fixed initial ssthresh in packets, per network namespace, set at run time by the node
 * (nodes/agent/rig_node/ccparams.py). Key: the namespace's cookie (SO_NETNS_COOKIE), which the
 * kernel never reuses, so a deleted namespace's value cannot reach a new one; LRU: entries of
 * namespaces long gone make room. No entry: the kernel's initial ssthresh (infinite, or a
 * tcp_metrics cache value).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u32);
} init_ssthresh SEC(".maps");

/* Template for new entries; a global because the BPF stack (512 bytes) is short. */
const struct conn empty_conn = {};

/* Per-subflow private state (icsk_ca_priv, at most 104 bytes). */
struct coupled_ca {
	__u64 conn_key;  /* MPTCP socket address, 0 = plain TCP */
	__s64 acc;       /* fractional cwnd change, Q24 */
	__u32 slot;      /* index in conns[conn_key].slots */
	__u32 loss_una;  /* snd_una at the last loss */
	__u32 ell1;      /* bytes acked between the last two losses */
	__u32 lowat;     /* TCP_NOTSENT_LOWAT last set on this subflow, 0 = not yet */
};

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct coupled_ca *ca_of(const struct sock *sk)
{
	return (void *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

/* The MPTCP socket this subflow belongs to, as a map key; 0 if not a subflow. */
static __always_inline __u64 mptcp_conn_key(struct sock *sk)
{
	struct mptcp_subflow_context *subflow;
	struct inet_connection_sock *icsk = (void *)sk;

#ifdef CC_UNCOUPLED
	return 0;
#endif
	if (!tcp_sk(sk)->is_mptcp || !icsk->icsk_ulp_data)
		return 0;
	subflow = bpf_rdonly_cast(icsk->icsk_ulp_data,
				  bpf_core_type_id_kernel(struct mptcp_subflow_context));
	return (__u64)subflow->conn;
}

static __always_inline __u64 ell_of(const struct tcp_sock *tp, const struct coupled_ca *ca)
{
	__u32 since = tp->snd_una - ca->loss_una;

	return since > ca->ell1 ? since : ca->ell1;
}

/*
 * The window other subflows see for this one: cwnd, except in fast recovery, where PRR
 * walks cwnd down to the new ssthresh over an RTT and the window the path will resume
 * with is ssthresh (as the out-of-tree OLIA, mptcp_get_crt_cwnd). Published on every ACK
 * (in_ack_event), also during recovery, when cong_avoid is not called.
 */
static __always_inline __u32 current_window(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (((struct inet_connection_sock *)sk)->icsk_ca_state == TCP_CA_RECOVERY_STATE)
		return tp->snd_ssthresh;
	return tp->snd_cwnd;
}

/* This subflow's slot in its connection's entry, if it holds one. */
static __always_inline struct slot *own_slot(struct sock *sk)
{
	struct coupled_ca *ca = ca_of(sk);
	__u64 key = ca->conn_key;
	struct conn *c;

	if (!key)
		return 0;
	c = bpf_map_lookup_elem(&conns, &key);
	if (!c || c->slots[ca->slot & (CC_MAX_PATHS - 1)].sk != (__u64)sk)
		return 0;
	return &c->slots[ca->slot & (CC_MAX_PATHS - 1)];
}

/*
 * Publish this subflow's state and copy its connection's slots into snap.
 * Returns the number of live paths (snap->self is this subflow's slot), 0 for plain TCP.
 */
static __always_inline int gather(struct sock *sk, struct cc_paths *snap)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct coupled_ca *ca = ca_of(sk);
	struct conn *c;
	__u64 key = ca->conn_key, me = (__u64)sk;
	__u32 idx = ca->slot & (CC_MAX_PATHS - 1);
	int i, n = 0;

	if (!key)
		return 0;
	c = bpf_map_lookup_elem(&conns, &key);
	if (!c) {
		bpf_map_update_elem(&conns, &key, &empty_conn, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&conns, &key);
		if (!c)
			return 0;
	}
	if (c->slots[idx].sk != me) { /* first ACK, or the entry was recreated */
		for (i = 0; i < CC_MAX_PATHS; i++) {
			if (__sync_val_compare_and_swap(&c->slots[i].sk, 0, me) == 0)
				break;
		}
		if (i == CC_MAX_PATHS)
			return 0; /* more subflows than slots: this one runs Reno */
		idx = i;
		ca->slot = i;
	}
	c->slots[idx].cwnd = current_window(sk);
	c->slots[idx].rtt_us = (tp->srtt_us >> 3) ?: 1;
	c->slots[idx].ell = ell_of(tp, ca);

	snap->self = idx;
	for (i = 0; i < CC_MAX_PATHS; i++) {
		if (!c->slots[i].sk)
			continue; /* free slot: cwnd stays 0, the math skips it */
		snap->p[i].cwnd = c->slots[i].cwnd;
		snap->p[i].rtt_us = c->slots[i].rtt_us;
		snap->p[i].ell = c->slots[i].ell;
		n += c->slots[i].cwnd != 0;
	}
	return n;
}

/* Like the kernel's tcp_is_cwnd_limited (an inline, not a kfunc). */
static __always_inline bool cwnd_limited(const struct tcp_sock *tp)
{
	if (tp->snd_cwnd < tp->snd_ssthresh)
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return tp->is_cwnd_limited;
}

/*
 * The kernel calls init when the connection is established, after tcp_init_metrics has set
 * the initial ssthresh (and again if the socket's CC is changed later): a fixed initial
 * ssthresh set for this socket's namespace replaces the kernel's there.
 */
static __always_inline void fix_initial_ssthresh(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u64 netns = sk->__sk_common.skc_net.net->net_cookie;
	__u32 *packets = bpf_map_lookup_elem(&init_ssthresh, &netns);

	if (packets && *packets)
		tp->snd_ssthresh = *packets < tp->snd_cwnd_clamp ? *packets : tp->snd_cwnd_clamp;
}

SEC("struct_ops")
void BPF_PROG(coupled_init, struct sock *sk)
{
	struct coupled_ca *ca = ca_of(sk);

	fix_initial_ssthresh(sk);

	ca->conn_key = mptcp_conn_key(sk);
	ca->acc = 0;
	ca->slot = 0;
	ca->loss_una = tcp_sk(sk)->snd_una;
	ca->ell1 = 0;
	ca->lowat = 0;
}

SEC("struct_ops")
void BPF_PROG(coupled_release, struct sock *sk)
{
	struct coupled_ca *ca = ca_of(sk);
	__u64 key = ca->conn_key;
	struct conn *c;
	int i, used = 0;

	if (!key)
		return;
	c = bpf_map_lookup_elem(&conns, &key);
	if (!c)
		return;
	__sync_val_compare_and_swap(&c->slots[ca->slot & (CC_MAX_PATHS - 1)].sk, (__u64)sk, 0);
	for (i = 0; i < CC_MAX_PATHS; i++)
		used += c->slots[i].sk != 0;
	if (!used)
		bpf_map_delete_elem(&conns, &key);
	ca->conn_key = 0;
}

SEC("struct_ops")
void BPF_PROG(coupled_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct coupled_ca *ca = ca_of(sk);
	struct cc_paths snap = {};
	__s64 steps;
	__u32 cwnd;
	int n;

	n = gather(sk, &snap);
	if (!cwnd_limited(tp))
		return;
	if (tp->snd_cwnd < tp->snd_ssthresh) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	if (n <= 1) { /* a lone subflow is plain Reno under all three algorithms */
		tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked);
		return;
	}
	ca->acc += CC_INCREASE(&snap) * (__s64)acked;
	steps = ca->acc >> CC_SHIFT; /* arithmetic shift: floor, also for decreases */
	if (!steps)
		return;
	ca->acc -= steps << CC_SHIFT;
	cwnd = tp->snd_cwnd;
	if (steps > 0) {
		cwnd += steps;
		if (cwnd > tp->snd_cwnd_clamp)
			cwnd = tp->snd_cwnd_clamp;
	} else {
		cwnd = cwnd > (__u32)(-steps) + 2 ? cwnd + steps : 2; /* OLIA may shrink a window */
	}
	tp->snd_cwnd = cwnd;
}

SEC("struct_ops")
__u32 BPF_PROG(coupled_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct coupled_ca *ca = ca_of(sk);
	struct cc_paths snap = {};
	struct slot *slot;
	__u32 ssthresh;
	int n;

	n = gather(sk, &snap);
	/* one call per congestion event: close OLIA's inter-loss interval */
	if (tp->snd_una != ca->loss_una) {
		ca->ell1 = tp->snd_una - ca->loss_una;
		ca->loss_una = tp->snd_una;
	}
	ca->acc = 0;
	ssthresh = n <= 1 ? tcp_reno_ssthresh(sk) : CC_SSTHRESH(sk, &snap);
	slot = own_slot(sk);
	if (slot) /* the others see the reduced window from now on */
		slot->cwnd = ssthresh;
	return ssthresh;
}

SEC("struct_ops")
__u32 BPF_PROG(coupled_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

/*
 * Upstream MPTCP's scheduler hands the subflow it picks up to 64 kB at a time, whatever that
 * subflow's window, and picks any subflow whose unsent bytes are under its TCP_NOTSENT_LOWAT
 * (unset: no bound). A subflow the coupled increase holds at 2-3 packets (OLIA does that to
 * paths outside its best set) so came to hold 100-350 kB for seconds, and the connection
 * stalled at the data level behind it (docs/congestion-control.md, "OLIA and upstream's
 * scheduler"). Each subflow's unsent data is therefore bounded to about one window, as the
 * out-of-tree kernel's scheduler did by sending only into open windows. Set again when the
 * window has moved by more than a quarter, not on every ACK.
 */
static __always_inline void bound_unsent(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct coupled_ca *ca = ca_of(sk);
	__u64 bytes = (__u64)tp->snd_cwnd * tp->mss_cache;
	int lowat = bytes < (1U << 30) ? (int)bytes : 1 << 30;
	__u32 old = ca->lowat;

	if (!ca->conn_key || (old && lowat >= old - old / 4 && lowat <= old + old / 4))
		return;
	if (!bpf_setsockopt(sk, SOL_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof(lowat)))
		ca->lowat = lowat;
}

/*
 * Kernel 6.18 workaround (docs/congestion-control.md, "Runaway windows"): an MPTCP subflow
 * running a BPF CC sometimes enters fast recovery with snd_ssthresh = 0x82205665, stale stack
 * contents, without this object's ssthresh having run; PRR then sets cwnd to
 * ssthresh * prr_delivered / prior_cwnd, ~1e8..1e9 packets. No window of a million packets is
 * real here (the arithmetic clamps at CC_MAX_CWND), so such values are put back on the next
 * ACK: ssthresh to the Reno halving of the window before the reduction, cwnd to ssthresh.
 */
SEC("struct_ops")
void BPF_PROG(coupled_in_ack_event, struct sock *sk, __u32 flags)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct slot *slot;

	if (tp->snd_ssthresh > CC_MAX_CWND && tp->snd_ssthresh != TCP_INFINITE_SSTHRESH) {
		tp->snd_ssthresh = tp->prior_cwnd > 4 && tp->prior_cwnd <= CC_MAX_CWND ? tp->prior_cwnd / 2 : 2;
		__sync_fetch_and_add(&repairs, 1);
	}
	if (tp->snd_cwnd > CC_MAX_CWND) {
		tp->snd_cwnd = tp->snd_ssthresh <= CC_MAX_CWND ? tp->snd_ssthresh : 2;
		__sync_fetch_and_add(&repairs, 1);
	}
	slot = own_slot(sk);
	if (slot)
		slot->cwnd = current_window(sk);
	bound_unsent(sk);
}

#define COUPLED_OPS(var, ccname)                              \
	SEC(".struct_ops")                                    \
	struct tcp_congestion_ops var = {                     \
		.init = (void *)coupled_init,                 \
		.release = (void *)coupled_release,           \
		.ssthresh = (void *)coupled_ssthresh,         \
		.cong_avoid = (void *)coupled_cong_avoid,     \
		.undo_cwnd = (void *)coupled_undo_cwnd,       \
		.in_ack_event = (void *)coupled_in_ack_event, \
		.name = ccname,                               \
	}
