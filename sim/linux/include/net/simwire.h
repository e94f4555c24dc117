/*
 * What the simulated frames carry, in place of Ethernet, IP and TCP headers:
 * who sent the segment, which message and segment it is, and whether it is
 * data or the peer's acknowledgement of one segment.  Dom0 reads it where a
 * real bridge and NIC would read the real headers.
 */
#ifndef SIM_NET_SIMWIRE_H
#define SIM_NET_SIMWIRE_H

#include <stdint.h>

#define SIMWIRE_MAGIC 0x5857u
#define SIMWIRE_DATA 1
#define SIMWIRE_ACK 2

struct simwire_hdr {
	uint16_t magic;
	uint16_t type;
	uint16_t guest;   /* the sending domain: the bridge's "MAC address" */
	uint16_t seg;
	uint16_t nseg;
	uint16_t reserved;
	uint32_t msg;
	uint32_t len;     /* payload bytes after the header */
};

#define TCP_MSS 1448

#endif
