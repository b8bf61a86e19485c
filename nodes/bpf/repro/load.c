// SPDX-License-Identifier: GPL-2.0
/* Load min_reno.bpf.o: register the CC and attach the watcher until SIGINT/SIGTERM. */
#include <bpf/libbpf.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map;
	struct bpf_link *links[8];
	int n = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s min_reno.bpf.o\n", argv[0]);
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "cannot load %s\n", argv[1]);
		return 1;
	}
	bpf_object__for_each_program(prog, obj) {
		if (bpf_program__type(prog) != BPF_PROG_TYPE_STRUCT_OPS && n < 8)
			links[n++] = bpf_program__attach(prog);
	}
	bpf_object__for_each_map(map, obj) {
		if (bpf_map__type(map) == BPF_MAP_TYPE_STRUCT_OPS && n < 8)
			links[n++] = bpf_map__attach_struct_ops(map);
	}
	for (int i = 0; i < n; i++) {
		if (!links[i]) {
			fprintf(stderr, "attach failed (is min_reno registered already?)\n");
			return 1;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fprintf(stderr, "min_reno registered, watcher attached\n");
	while (!stop)
		pause();
	for (int i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
	bpf_object__close(obj);
	return 0;
}
