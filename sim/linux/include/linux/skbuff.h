/*
 * Socket buffers, shaped like Linux 2.6.16's: the struct sk_buff with its
 * list links, control buffer, length and head/data/tail/end pointers, and a
 * data area shared between clones and reference counted in the
 * skb_shared_info at skb->end.
 */
#ifndef SIM_LINUX_SKBUFF_H
#define SIM_LINUX_SKBUFF_H

#include "linux/kernel.h"
#include "sim/truth.h"

struct net_device;
struct sock;
struct kmem_cache;

struct skb_frag_struct {
	void *page;
	uint16_t page_offset;
	uint16_t size;
};

typedef struct skb_frag_struct skb_frag_t;

struct skb_shared_info {
	atomic_int dataref;
	unsigned short nr_frags;
	void *destructor_arg; /* for skb->destructor: whose pages the frags are */
	struct skb_frag_struct frags[1];
};

struct sk_buff {
	/* These two members must be first: struct sk_buff_head aliases them. */
	struct sk_buff *next;
	struct sk_buff *prev;

	struct sock *sk;
	struct net_device *dev;
	struct net_device *input_dev;

	/*
	 * Private to the layer holding the skb (TCP keeps its sequence
	 * numbers here); the last bytes carry the simulation's truth tag.
	 */
	char cb[48];
	int64_t tstamp; /* CLOCK_MONOTONIC ns at allocation */

	unsigned int len;
	unsigned int data_len;
	unsigned short protocol;
	uint8_t cloned;
	uint8_t ip_summed;
	uint8_t pkt_type;
	unsigned short tso_segs;
	unsigned short tso_size;

	void (*destructor)(struct sk_buff *skb);
	atomic_int users;
	unsigned int truesize;

	unsigned char *head;
	unsigned char *data;
	unsigned char *tail;
	unsigned char *end;
};

struct sk_buff_head {
	struct sk_buff *next;
	struct sk_buff *prev;
	uint32_t qlen;
	spinlock_t lock;
};

#define CHECKSUM_NONE 0
#define CHECKSUM_HW 1
#define CHECKSUM_UNNECESSARY 2

#define skb_shinfo(skb) ((struct skb_shared_info *)(void *)((skb)->end))

/* The truth tag rides in the last bytes of the control buffer. */
#define SKB_TAG_OFFSET (sizeof(((struct sk_buff *)0)->cb) - sizeof(struct truth_tag))
static inline struct truth_tag *skb_tag(struct sk_buff *skb)
{
	return (struct truth_tag *)(void *)&skb->cb[SKB_TAG_OFFSET];
}

/* The cache of sk_buff heads, set up by skb_init(). */
extern struct kmem_cache *skbuff_head_cache;

void skb_init(void);
void skb_fini(void);

struct sk_buff *alloc_skb_from_cache(struct kmem_cache *cp, unsigned int size);
struct sk_buff *alloc_skb(unsigned int size);
struct sk_buff *skb_clone(struct sk_buff *skb);
void __kfree_skb(struct sk_buff *skb);
void kfree_skb(struct sk_buff *skb);
#define dev_kfree_skb(skb) kfree_skb(skb)
#define dev_kfree_skb_any(skb) kfree_skb(skb)

unsigned char *skb_put(struct sk_buff *skb, unsigned int len);
void skb_reserve(struct sk_buff *skb, unsigned int len);
unsigned char *skb_pull(struct sk_buff *skb, unsigned int len);

void skb_queue_head_init(struct sk_buff_head *list);
void skb_queue_tail(struct sk_buff_head *list, struct sk_buff *newsk);
struct sk_buff *skb_dequeue(struct sk_buff_head *list);
void __skb_queue_tail(struct sk_buff_head *list, struct sk_buff *newsk);
struct sk_buff *__skb_dequeue(struct sk_buff_head *list);
void __skb_unlink(struct sk_buff *skb, struct sk_buff_head *list);

/* skbs allocated and not yet freed in this domain. */
long skb_in_use(void);

#endif
