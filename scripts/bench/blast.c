// A frame blaster for the offload benchmark: sends the 60-byte frames of FILE round robin
// out of IFNAME through an AF_PACKET socket (qdisc bypassed) for SECONDS, as fast as the
// device takes them. Unlike trafgen it keeps going when the device pushes back (EAGAIN,
// ENOBUFS), which a veth into a threaded NAPI does. Prints the frames sent.
//
//   cc -O2 -o blast blast.c && ./blast IFNAME FILE SECONDS
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FRAME 60
#define BATCH 64

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s IFNAME FILE SECONDS\n", argv[0]);
		return 2;
	}
	FILE *f = fopen(argv[2], "rb");
	if (!f) {
		perror(argv[2]);
		return 1;
	}
	static unsigned char frames[65536][FRAME];
	size_t count = fread(frames, FRAME, 65536, f);
	fclose(f);
	if (count == 0) {
		fprintf(stderr, "%s: no frames\n", argv[2]);
		return 1;
	}
	int fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0) {
		perror("socket");
		return 1;
	}
	int one = 1;
	setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one);
	struct sockaddr_ll addr = { .sll_family = AF_PACKET, .sll_ifindex = if_nametoindex(argv[1]),
				    .sll_halen = ETH_ALEN };
	if (!addr.sll_ifindex) {
		perror(argv[1]);
		return 1;
	}
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	double end = now() + atof(argv[3]);
	unsigned long long sent = 0;
	size_t next = 0;
	while (now() < end) {
		for (int i = 0; i < BATCH; i++) {
			iov[i].iov_base = frames[(next + i) % count];
			iov[i].iov_len = FRAME;
			memset(&msgs[i], 0, sizeof msgs[i]);
			msgs[i].msg_hdr.msg_name = &addr;
			msgs[i].msg_hdr.msg_namelen = sizeof addr;
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		int n = sendmmsg(fd, msgs, BATCH, MSG_DONTWAIT);
		if (n > 0) {
			sent += n;
			next += n;
		} else if (errno != EAGAIN && errno != ENOBUFS && errno != EINTR) {
			perror("sendmmsg");
			return 1;
		}
	}
	printf("%llu\n", sent);
	return 0;
}
