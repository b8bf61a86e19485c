// SPDX-License-Identifier: GPL-2.0
/*
 * Runs coupled_math.h (the arithmetic the BPF objects execute) on states read from stdin,
 * one per line: ALGO SELF CWND RTT_US ELL [CWND RTT_US ELL ...]   (ALGO: lia|olia|balia)
 * and prints, per line: INCREASE_Q24 SSTHRESH (SSTHRESH is BALIA's; 0 for the others).
 */
#include <linux/types.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#include "coupled_math.h"

int main(void)
{
	char algo[16];
	int self;

	while (scanf("%15s %d", algo, &self) == 2) {
		struct cc_paths s = {0};
		struct cc_path *p = s.p;
		long long inc = 0;
		unsigned int ssthresh = 0;
		int n = 0, c;

		while (n < CC_MAX_PATHS &&
		       scanf("%u %u %llu", &p[n].cwnd, &p[n].rtt_us, (unsigned long long *)&p[n].ell) == 3) {
			n++;
			while ((c = getchar()) == ' ' || c == '\t')
				;
			if (c == '\n' || c == EOF)
				break;
			ungetc(c, stdin);
		}
		s.self = self;
		if (!strcmp(algo, "lia"))
			inc = lia_increase(&s);
		else if (!strcmp(algo, "olia"))
			inc = olia_increase(&s);
		else if (!strcmp(algo, "balia")) {
			inc = balia_increase(&s);
			ssthresh = balia_ssthresh(&s);
		} else {
			fprintf(stderr, "unknown algorithm %s\n", algo);
			return 2;
		}
		printf("%lld %u\n", inc, ssthresh);
		fflush(stdout);
	}
	return 0;
}
