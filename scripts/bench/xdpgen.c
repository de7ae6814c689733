// A frame generator for the offload benchmark: runs xdpgen.bpf.o's program with BPF_PROG_RUN
// in live-frames mode, so that 60-byte UDP frames leave IFNAME as XDP frames (the way frames
// from a NIC reach a driver) for SECONDS, as fast as they go. Destinations come from FILE,
// one "MAC IP" per line; the source MAC is IFNAME's. Prints the frames run.
//
//   cc -O2 -o xdpgen xdpgen.c -lbpf && ./xdpgen OBJECT IFNAME FILE SECONDS
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct dest {
	unsigned char mac[6];
	unsigned char pad[2];
	unsigned char ip[4];
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s OBJECT IFNAME FILE SECONDS\n", argv[0]);
		return 2;
	}
	unsigned ifindex = if_nametoindex(argv[2]);
	if (!ifindex) {
		perror(argv[2]);
		return 1;
	}
	struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "cannot load %s\n", argv[1]);
		return 1;
	}
	struct bpf_program *prog = bpf_object__find_program_by_name(obj, "xdpgen");
	int dests = bpf_object__find_map_fd_by_name(obj, "dests");
	int config = bpf_object__find_map_fd_by_name(obj, "config");
	if (!prog || dests < 0 || config < 0) {
		fprintf(stderr, "%s: program or maps missing\n", argv[1]);
		return 1;
	}
	FILE *f = fopen(argv[3], "r");
	if (!f) {
		perror(argv[3]);
		return 1;
	}
	unsigned count = 0;
	char mac[32], ip[32];
	while (count < 8192 && fscanf(f, "%31s %31s", mac, ip) == 2) {
		struct dest d = { 0 };
		if (sscanf(mac, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &d.mac[0], &d.mac[1], &d.mac[2],
			   &d.mac[3], &d.mac[4], &d.mac[5]) != 6 ||
		    inet_pton(AF_INET, ip, d.ip) != 1) {
			fprintf(stderr, "bad line: %s %s\n", mac, ip);
			return 1;
		}
		bpf_map_update_elem(dests, &count, &d, 0);
		count++;
	}
	fclose(f);
	unsigned key = 0, zero = 0;
	bpf_map_update_elem(config, &key, &ifindex, 0);
	key = 1;
	bpf_map_update_elem(config, &key, &count, 0);
	key = 2;
	bpf_map_update_elem(config, &key, &zero, 0);
	// Ethernet (addresses set per frame), IPv4 10.0.0.1 -> dest, UDP 1024 -> 9, 18 bytes.
	unsigned char frame[60] = { 0 };
	char path[64];
	snprintf(path, sizeof path, "/sys/class/net/%s/address", argv[2]);
	FILE *a = fopen(path, "r");
	if (a) {
		if (fscanf(a, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &frame[6], &frame[7], &frame[8],
			   &frame[9], &frame[10], &frame[11]) != 6)
			fprintf(stderr, "cannot read %s\n", path);
		fclose(a);
	}
	unsigned char rest[] = { 0x08, 0x00, 0x45, 0, 0, 0x2e, 0, 0, 0x40, 0, 0x40, 0x11, 0, 0,
				 10, 0, 0, 1, 0, 0, 0, 0, 0x04, 0x00, 0x00, 0x09, 0x00, 0x1a, 0, 0 };
	memcpy(frame + 12, rest, sizeof rest);
	double end = now() + atof(argv[4]);
	unsigned long long runs = 0;
	while (now() < end) {
		LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = sizeof frame,
			    .repeat = 1 << 16, .flags = BPF_F_TEST_XDP_LIVE_FRAMES);
		if (bpf_prog_test_run_opts(bpf_program__fd(prog), &opts)) {
			perror("BPF_PROG_RUN");
			return 1;
		}
		runs += 1 << 16;
	}
	printf("%llu\n", runs);
	return 0;
}
