/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Window-increase arithmetic of the coupled MPTCP congestion controls, in integers.
 *
 * Pure functions over a snapshot of the connection's subflows. The same file is
 * compiled into the BPF congestion controls and, as plain C, into math_check
 * (the unit tests compare it with a float reference of the published formulas).
 *
 * Units: cwnd in packets, rtt in microseconds, ell in bytes. Results are in Q24
 * (CC_ONE = 1 packet): the change of cwnd for one acknowledged packet.
 * Every rtt is divided by the smallest rtt of the connection first (rho <= 1, Q20), so
 * the rates w/rtt become w*rho and nothing overflows for cwnd <= 2^20 and 8 subflows
 * (w*rho < 2^40, their sum < 2^43, w*rho^2 < 2^60).
 */
#ifndef COUPLED_MATH_H
#define COUPLED_MATH_H

#define CC_MAX_PATHS 8
#define CC_SHIFT 24
#define CC_ONE (1ULL << CC_SHIFT)
#define CC_RHO_SHIFT 20
#define CC_MAX_CWND (1U << 20)

struct cc_path {
	__u32 cwnd;
	__u32 rtt_us;
	__u64 ell; /* OLIA: bytes acknowledged between its last two losses, or since the last one */
};

/*
 * A snapshot of one connection: the paths with cwnd > 0 take part (entries with cwnd 0
 * are free slots and are skipped); p[self] is the path being acknowledged.
 */
struct cc_paths {
	struct cc_path p[CC_MAX_PATHS];
	__u32 self;
};

/*
 * In BPF the entry points (CC_API) and the per-path steps (CC_STEP) are global functions:
 * the verifier checks each once, on its own, instead of once per path through the
 * caller's unrolled loops (which exceeds its budget of a million instructions).
 */
#ifdef __bpf__
#define CC_API __attribute__((noinline))
#define CC_STEP __attribute__((noinline))
#else
#define CC_API static inline
#define CC_STEP static inline
#endif

/* floor(a * 2^q / b) without a 128-bit product: exact while b < 2^(64-q). */
static __always_inline __u64 cc_frac(__u64 a, __u64 b, unsigned int q)
{
	if (!b)
		return 0;
	return ((a / b) << q) + (((a % b) << q) / b);
}

static __always_inline __u64 cc_clamp_cwnd(__u32 w)
{
	if (w < 1)
		return 1;
	return w > CC_MAX_CWND ? CC_MAX_CWND : w;
}

/* Per-path rate w*rho (Q20), with rho = rtt_min/rtt (Q20); summed over the live paths. */
struct cc_norm {
	__u64 wr[CC_MAX_PATHS];
	__u32 rho[CC_MAX_PATHS];
	__u64 sum_wr;
};

/* The smallest rtt over the live paths. */
CC_STEP __u32 cc_rtt_min(const struct cc_paths *s)
{
	__u32 rmin = 0xffffffff;
	int i;

	if (!s)
		return 1;
	for (i = 0; i < CC_MAX_PATHS; i++) {
		if (s->p[i].cwnd && s->p[i].rtt_us && s->p[i].rtt_us < rmin)
			rmin = s->p[i].rtt_us;
	}
	return rmin;
}

/* rho and w*rho of path i (0 for a free slot); returns w*rho. */
CC_STEP __u64 cc_norm_path(const struct cc_paths *s, struct cc_norm *out, __u32 rmin, __u32 i)
{
	__u64 rho;

	if (!s || !out)
		return 0;
	i &= CC_MAX_PATHS - 1;
	out->rho[i] = 0;
	out->wr[i] = 0;
	if (!s->p[i].cwnd)
		return 0;
	rho = s->p[i].rtt_us ? ((__u64)rmin << CC_RHO_SHIFT) / s->p[i].rtt_us : 1;
	rho = rho ?: 1;
	out->rho[i] = rho;
	out->wr[i] = cc_clamp_cwnd(s->p[i].cwnd) * rho;
	return out->wr[i];
}

static __always_inline void cc_normalise(const struct cc_paths *s, struct cc_norm *out)
{
	__u32 rmin = cc_rtt_min(s);
	int i;

	out->sum_wr = 0;
	for (i = 0; i < CC_MAX_PATHS; i++)
		out->sum_wr += cc_norm_path(s, out, rmin, i);
}

/* w*rho^2 (Q40): w/rtt^2 up to the common factor rtt_min^2. */
static __always_inline __u64 cc_wrr(const struct cc_norm *c, int i)
{
	return c->wr[i] * c->rho[i];
}

/* wrr / sum_wr^2 in Q24, i.e. (w/rtt^2) / (sum_k w_k/rtt_k)^2. */
static __always_inline __u64 cc_coupled_term(__u64 wrr, __u64 sum_wr)
{
	__u64 v = cc_frac(wrr, sum_wr, CC_SHIFT - CC_RHO_SHIFT); /* wrr/sum_wr, Q24 */

	return cc_frac(v, sum_wr, CC_RHO_SHIFT);
}

/*
 * LIA, RFC 6356 section 3: per acked packet on path i,
 * min(alpha / w_total, 1 / w_i) with alpha / w_total = max_k(w_k/rtt_k^2) / (sum_k w_k/rtt_k)^2.
 */
CC_API __s64 lia_increase(const struct cc_paths *s)
{
	struct cc_norm c;
	__u64 best = 0, coupled, uncoupled;
	int i;

	if (!s)
		return 0;
	cc_normalise(s, &c);
	for (i = 0; i < CC_MAX_PATHS; i++) {
		if (cc_wrr(&c, i) > best)
			best = cc_wrr(&c, i);
	}
	coupled = cc_coupled_term(best, c.sum_wr);
	uncoupled = CC_ONE / cc_clamp_cwnd(s->p[s->self & (CC_MAX_PATHS - 1)].cwnd);
	return coupled < uncoupled ? coupled : uncoupled;
}

/* OLIA's path quality ell/rtt^2, up to the common factor rtt_min^2: (ell*rho >> 20) * rho. */
static __always_inline __u64 olia_quality(const struct cc_paths *s, const struct cc_norm *c, int i)
{
	return ((s->p[i].ell * c->rho[i]) >> CC_RHO_SHIFT) * c->rho[i];
}

/*
 * OLIA, Khalili et al. (ToN 2013), per acked packet on path r:
 * (w_r/rtt_r^2) / (sum_p w_p/rtt_p)^2 + alpha_r / w_r, where with M = paths of largest
 * window and B = paths of largest ell/rtt^2 ("best paths"):
 * alpha_r = 1/(n |B\M|) on B\M, -1/(n |M|) on M when B\M is not empty, else 0.
 */
CC_API __s64 olia_increase(const struct cc_paths *s)
{
	struct cc_norm c;
	__u64 best_q = 0, max_w = 0, term, w, q;
	int i, self, n = 0, in_m = 0, in_b_not_m = 0;

	if (!s)
		return 0;
	self = s->self & (CC_MAX_PATHS - 1);
	cc_normalise(s, &c);
	for (i = 0; i < CC_MAX_PATHS; i++) {
		if (!s->p[i].cwnd)
			continue;
		q = olia_quality(s, &c, i);
		best_q = q > best_q ? q : best_q;
		w = cc_clamp_cwnd(s->p[i].cwnd);
		max_w = w > max_w ? w : max_w;
	}
	for (i = 0; i < CC_MAX_PATHS; i++) {
		if (!s->p[i].cwnd)
			continue;
		n++;
		if (cc_clamp_cwnd(s->p[i].cwnd) == max_w)
			in_m++;
		else if (olia_quality(s, &c, i) == best_q)
			in_b_not_m++;
	}
	w = cc_clamp_cwnd(s->p[self].cwnd);
	term = cc_coupled_term(cc_wrr(&c, self), c.sum_wr);
	if (!in_b_not_m)
		return term;
	if (w == max_w)
		return (__s64)term - (__s64)(CC_ONE / (n * in_m * w));
	if (olia_quality(s, &c, self) == best_q)
		return term + CC_ONE / (n * in_b_not_m * w);
	return term;
}

/* max_k w_k*rho_k: the largest rate x = w/rtt, in the same units as wr. */
static __always_inline __u64 balia_max_rate(const struct cc_norm *c)
{
	__u64 max_wr = 0;
	int i;

	for (i = 0; i < CC_MAX_PATHS; i++)
		max_wr = c->wr[i] > max_wr ? c->wr[i] : max_wr;
	return max_wr;
}

/*
 * BALIA, Peng et al. (ToN 2016), per acked packet on path r:
 * (x_r/rtt_r) / (sum_k x_k)^2 * (1 + alpha_r)/2 * (4 + alpha_r)/5, alpha_r = max_k x_k / x_r.
 * With X = max_k x_k and x_r * rtt_r = w_r this is
 * (x_r + X)/sum_x * (4 x_r + X)/sum_x / (10 w_r): both quotients stay below 5, so no
 * term grows with alpha (which is unbounded when one path is nearly idle).
 */
CC_API __s64 balia_increase(const struct cc_paths *s)
{
	struct cc_norm c;
	__u64 x, max_x, sum, a, b;
	int self;

	if (!s)
		return 0;
	self = s->self & (CC_MAX_PATHS - 1);
	cc_normalise(s, &c);
	x = c.wr[self];
	max_x = balia_max_rate(&c);
	sum = c.sum_wr;
	if (sum >= 1ULL << 39) { /* cc_frac(., sum, 24) needs sum < 2^40 */
		x >>= 4;
		max_x >>= 4;
		sum >>= 4;
	}
	a = cc_frac(x + max_x, sum, CC_SHIFT);     /* <= 2, Q24 */
	b = cc_frac(4 * x + max_x, sum, CC_SHIFT); /* <= 5, Q24 */
	return ((a * b) >> CC_SHIFT) / (10 * cc_clamp_cwnd(s->p[self].cwnd));
}

/* BALIA on loss: w_r - (w_r/2) * min(alpha_r, 1.5), at least 2 packets. */
CC_API __u32 balia_ssthresh(const struct cc_paths *s)
{
	struct cc_norm c;
	__u64 x, max_x, alpha, w, cut;
	int self;

	if (!s)
		return 2;
	self = s->self & (CC_MAX_PATHS - 1);
	cc_normalise(s, &c);
	x = c.wr[self];
	max_x = balia_max_rate(&c);
	w = cc_clamp_cwnd(s->p[self].cwnd);
	if (2 * max_x >= 3 * x)
		alpha = 3ULL << 15; /* 1.5 in Q16 */
	else
		alpha = cc_frac(max_x, x, 16);
	cut = (w * alpha) >> 17;
	return w - cut > 2 ? (__u32)(w - cut) : 2;
}

#endif /* COUPLED_MATH_H */
