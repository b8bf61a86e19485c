// SPDX-License-Identifier: GPL-2.0
/*
 * Reproducer for the runaway windows of BPF congestion controls on MPTCP subflows (kernel 6.18;
 * docs/congestion-control.md, "Runaway windows").
 *
 * min_reno: the smallest BPF Reno, three kernel kfuncs and no state of its own, which still
 * shows the problem. Its ssthresh also notes, per socket, how often it ran and what it saw.
 * A tracepoint watcher compares every socket running min_reno at each segment arrival
 * (tcp_probe) and ca-state change (tcp_cong_state_set) with its previous snapshot and prints
 * (trace_pipe, "runaway:") the first time snd_ssthresh becomes implausible: whether
 * ssthresh ran for this reduction (its last input vs. prior_cwnd) and whether the tracepoint
 * saw the state change.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "GPL";

extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

#define IMPLAUSIBLE (1U << 20) /* packets; TCP_INFINITE_SSTHRESH excepted */

struct rec {
	__u32 ss_calls, ss_last_cwnd, ss_last_ret; /* written by min_reno's ssthresh */
	__u32 ssthresh, cwnd, state;               /* previous snapshot */
	__u32 st_old, st_new, st_events;           /* last tcp_cong_state_set seen */
	__u32 reported;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct rec);
} recs SEC(".maps");

static struct rec *rec_of(void *sk)
{
	__u64 key = (__u64)sk;
	struct rec zero = {}, *r = bpf_map_lookup_elem(&recs, &key);

	if (r)
		return r;
	bpf_map_update_elem(&recs, &key, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&recs, &key);
}

SEC("struct_ops")
void BPF_PROG(min_reno_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(min_reno_ssthresh, struct sock *sk)
{
	__u32 ret = tcp_reno_ssthresh(sk);
	struct rec *r = rec_of(sk);

	if (r) {
		r->ss_calls++;
		r->ss_last_cwnd = ((struct tcp_sock *)sk)->snd_cwnd;
		r->ss_last_ret = ret;
	}
	return ret;
}

SEC("struct_ops")
__u32 BPF_PROG(min_reno_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops min_reno = {
	.ssthresh = (void *)min_reno_ssthresh,
	.cong_avoid = (void *)min_reno_cong_avoid,
	.undo_cwnd = (void *)min_reno_undo_cwnd,
	.name = "min_reno",
};

static void snapshot(struct sock *sk, int from_state_change, __u8 new_state)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	char name[9] = {};
	struct rec *r;

	if (!tp)
		return;
	bpf_probe_read_kernel_str(name, sizeof(name), tp->inet_conn.icsk_ca_ops->name);
	for (int i = 0; i < 8; i++) {
		if (name[i] != "min_reno"[i])
			return;
	}
	r = rec_of(sk);
	if (!r)
		return;
	if (!r->reported && tp->snd_ssthresh > IMPLAUSIBLE && tp->snd_ssthresh != 0x7fffffff) {
		r->reported = 1;
		bpf_printk("runaway: sk %lx mptcp %d ssthresh %u", (long)sk, tp->is_mptcp, tp->snd_ssthresh);
		bpf_printk("runaway:  cwnd %u prior_cwnd %u, before: ssthresh %u", tp->snd_cwnd, tp->prior_cwnd, r->ssthresh);
		bpf_printk("runaway:  ca_state %u -> %u, seen at a state change: %d", r->state,
			   tp->inet_conn.icsk_ca_state, from_state_change);
		bpf_printk("runaway:  last state change seen %u -> %u (%u seen)", r->st_old, r->st_new, r->st_events);
		bpf_printk("runaway:  ssthresh op: %u calls, last at cwnd %u returned %u", r->ss_calls,
			   r->ss_last_cwnd, r->ss_last_ret);
	}
	r->ssthresh = tp->snd_ssthresh;
	r->cwnd = tp->snd_cwnd;
	r->state = tp->inet_conn.icsk_ca_state;
	if (from_state_change) {
		r->st_old = r->state;
		r->st_new = new_state;
		r->st_events++;
	}
}

SEC("tp_btf/tcp_probe")
int BPF_PROG(watch_probe, struct sock *sk, struct sk_buff *skb)
{
	snapshot(sk, 0, 0);
	return 0;
}

SEC("tp_btf/tcp_cong_state_set")
int BPF_PROG(watch_state, struct sock *sk, __u8 ca_state)
{
	snapshot(sk, 1, ca_state);
	return 0;
}
