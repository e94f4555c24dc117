/*
 * net/core/skbuff.c: allocating, cloning and freeing socket buffers.
 *
 * Every skb's data area is one page from the domain's allocator, with the
 * skb_shared_info at its end as in Linux; clones share it and the last
 * reference frees the page.
 */
#include "linux/skbuff.h"

#include <stdlib.h>
#include <string.h>

#include "linux/mm.h"
#include "sim/delayline.h"
#include "xen/interface.h"

/* A slab cache stand-in: objects of one size, here backed by malloc. */
struct kmem_cache {
	const char *name;
	size_t size;
};

static struct kmem_cache skbuff_head = { "skbuff_head_cache", sizeof(struct sk_buff) };
struct kmem_cache *skbuff_head_cache = &skbuff_head;
static atomic_long skbs_in_use;

void skb_init(void)
{
}

void skb_fini(void)
{
}

long skb_in_use(void)
{
	return atomic_load(&skbs_in_use);
}

static void *kmem_cache_alloc(struct kmem_cache *cp)
{
	return calloc(1, cp->size);
}

static void kmem_cache_free(struct kmem_cache *cp, void *obj)
{
	(void)cp;
	free(obj);
}

/*
 * Allocates an skb from @cp with a data area for @size bytes, which must fit
 * in a page beside the shared info.  Returns NULL when memory is exhausted.
 */
struct sk_buff *alloc_skb_from_cache(struct kmem_cache *cp, unsigned int size)
{
	struct sk_buff *skb;
	unsigned char *data;

	if (size > PAGE_SIZE - sizeof(struct skb_shared_info))
		return NULL;
	skb = kmem_cache_alloc(cp);
	if (!skb)
		return NULL;
	data = alloc_page();
	if (!data) {
		kmem_cache_free(cp, skb);
		return NULL;
	}
	skb->tstamp = sim_now_ns();
	skb->truesize = size + sizeof(struct sk_buff);
	atomic_init(&skb->users, 1);
	skb->head = data;
	skb->data = data;
	skb->tail = data;
	skb->end = data + PAGE_SIZE - sizeof(struct skb_shared_info);
	atomic_init(&skb_shinfo(skb)->dataref, 1);
	skb_shinfo(skb)->nr_frags = 0;
	skb_shinfo(skb)->destructor_arg = NULL;
	atomic_fetch_add(&skbs_in_use, 1);
	return skb;
}

struct sk_buff *alloc_skb(unsigned int size)
{
	return alloc_skb_from_cache(skbuff_head_cache, size);
}

/*
 * Makes a second sk_buff for the same data: the caller gets an skb it may
 * queue and free on its own while the original stays where it is (TCP keeps
 * the original for retransmission and sends the clone).
 */
struct sk_buff *skb_clone(struct sk_buff *skb)
{
	struct sk_buff *n = kmem_cache_alloc(skbuff_head_cache);

	if (!n)
		return NULL;
	truth_note(ST_SKB_CLONE, skb_tag(skb), skb);
	n->next = n->prev = NULL;
	n->sk = NULL;
	n->dev = skb->dev;
	memcpy(n->cb, skb->cb, sizeof(skb->cb));
	n->len = skb->len;
	n->data_len = skb->data_len;
	n->protocol = skb->protocol;
	n->ip_summed = skb->ip_summed;
	n->tso_segs = skb->tso_segs;
	n->tso_size = skb->tso_size;
	n->truesize = skb->truesize;
	n->destructor = NULL;
	atomic_init(&n->users, 1);
	n->head = skb->head;
	n->data = skb->data;
	n->tail = skb->tail;
	n->end = skb->end;
	atomic_fetch_add(&skb_shinfo(skb)->dataref, 1);
	n->cloned = skb->cloned = 1;
	atomic_fetch_add(&skbs_in_use, 1);
	return n;
}

static void skb_release_data(struct sk_buff *skb)
{
	/* acq_rel: the last holder sees every write the others made. */
	if (atomic_fetch_sub(&skb_shinfo(skb)->dataref, 1) == 1)
		free_page(skb->head);
}

/* Frees an skb whose last user is gone: the end of its life. */
void __kfree_skb(struct sk_buff *skb)
{
	if (skb->destructor)
		skb->destructor(skb);
	skb_release_data(skb);
	skb->head = skb->data = NULL;
	kmem_cache_free(skbuff_head_cache, skb);
	atomic_fetch_sub(&skbs_in_use, 1);
}

void kfree_skb(struct sk_buff *skb)
{
	if (!skb)
		return;
	if (atomic_fetch_sub(&skb->users, 1) == 1)
		__kfree_skb(skb);
}

unsigned char *skb_put(struct sk_buff *skb, unsigned int len)
{
	unsigned char *tmp = skb->tail;

	skb->tail += len;
	skb->len += len;
	return tmp;
}

void skb_reserve(struct sk_buff *skb, unsigned int len)
{
	skb->data += len;
	skb->tail += len;
}

unsigned char *skb_pull(struct sk_buff *skb, unsigned int len)
{
	skb->len -= len;
	return skb->data += len;
}

void skb_queue_head_init(struct sk_buff_head *list)
{
	list->prev = list->next = (struct sk_buff *)(void *)list;
	list->qlen = 0;
	spin_lock_init(&list->lock);
}

void __skb_queue_tail(struct sk_buff_head *list, struct sk_buff *newsk)
{
	struct sk_buff *next = (struct sk_buff *)(void *)list, *prev = list->prev;

	newsk->next = next;
	newsk->prev = prev;
	next->prev = prev->next = newsk;
	list->qlen++;
}

void __skb_unlink(struct sk_buff *skb, struct sk_buff_head *list)
{
	struct sk_buff *next = skb->next, *prev = skb->prev;

	list->qlen--;
	skb->next = skb->prev = NULL;
	next->prev = prev;
	prev->next = next;
}

struct sk_buff *__skb_dequeue(struct sk_buff_head *list)
{
	struct sk_buff *skb = list->next;

	if (skb == (struct sk_buff *)(void *)list)
		return NULL;
	__skb_unlink(skb, list);
	return skb;
}

void skb_queue_tail(struct sk_buff_head *list, struct sk_buff *newsk)
{
	spin_lock(&list->lock);
	__skb_queue_tail(list, newsk);
	spin_unlock(&list->lock);
}

struct sk_buff *skb_dequeue(struct sk_buff_head *list)
{
	struct sk_buff *skb;

	spin_lock(&list->lock);
	skb = __skb_dequeue(list);
	spin_unlock(&list->lock);
	return skb;
}
