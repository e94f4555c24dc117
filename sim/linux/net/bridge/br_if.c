/*
 * net/bridge/br_if.c and br_fdb.c: the ports of xenbr0 and where frames go.
 * The forwarding database is static: a guest's frames go to the uplink, the
 * world's frames to the vif of the guest they are addressed to.
 */
#include <errno.h>
#include <stdlib.h>

#include "net/br_private.h"
#include "net/simwire.h"

static struct {
	spinlock_t lock;
	struct net_bridge_port *ports;
	uint16_t nports;
} br = { .lock = PTHREAD_MUTEX_INITIALIZER };

void br_init(void)
{
	br_handle_frame_hook = br_handle_frame;
}

void br_fini(void)
{
	br_handle_frame_hook = NULL;
	while (br.ports) {
		struct net_bridge_port *p = br.ports;

		br.ports = p->next;
		p->dev->br_port = NULL;
		free(p);
	}
}

int br_add_if(struct net_device *dev, uint16_t addr)
{
	struct net_bridge_port *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->dev = dev;
	p->addr = addr;
	spin_lock(&br.lock);
	p->port_no = ++br.nports;
	p->next = br.ports;
	br.ports = p;
	dev->br_port = p;
	spin_unlock(&br.lock);
	return 0;
}

struct net_bridge_port *br_fdb_get(const struct sk_buff *skb)
{
	const struct simwire_hdr *th = (const void *)skb->data;
	struct net_bridge_port *p;
	uint16_t addr;

	if (skb->len - skb->data_len < sizeof(*th) || th->magic != SIMWIRE_MAGIC)
		return NULL;
	addr = th->type == SIMWIRE_DATA ? BR_UPLINK : th->guest;
	spin_lock(&br.lock);
	for (p = br.ports; p && p->addr != addr; p = p->next)
		;
	spin_unlock(&br.lock);
	return p;
}
