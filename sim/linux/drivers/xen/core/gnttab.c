/*
 * drivers/xen/core/gnttab.c: granting page frames to dom0 (see xen/gnttab.h).
 *
 * Simplified: dom0 does not mark entries in use while it accesses a page
 * (Xen's GTF_reading/GTF_writing), so ending access cannot fail; the
 * frontends end access only after dom0's response, when dom0 is done.
 */
#include "xen/gnttab.h"

#include <errno.h>
#include <stdlib.h>

#include "linux/kernel.h"
#include "linux/mm.h"

static struct {
	spinlock_t lock;
	grant_entry_v1_t *table;
	grant_ref_t *free_list;
	unsigned int nfree;
} gnttab = { .lock = PTHREAD_MUTEX_INITIALIZER };

void gnttab_init(grant_entry_v1_t *table, unsigned int nr_entries)
{
	gnttab.table = table;
	gnttab.free_list = malloc(nr_entries * sizeof(*gnttab.free_list));
	if (!gnttab.free_list)
		abort();
	/* Reference 0 is reserved (GRANT_INVALID_REF), as the first few are in Linux. */
	for (unsigned int i = nr_entries - 1; i >= 1; i--)
		gnttab.free_list[gnttab.nfree++] = i;
}

int gnttab_grant_foreign_access(domid_t domid, unsigned long frame, int readonly)
{
	grant_ref_t ref;

	spin_lock(&gnttab.lock);
	if (!gnttab.nfree) {
		spin_unlock(&gnttab.lock);
		return -ENOSPC;
	}
	ref = gnttab.free_list[--gnttab.nfree];
	spin_unlock(&gnttab.lock);
	gnttab.table[ref].frame = (uint32_t)frame;
	gnttab.table[ref].domid = domid;
	wmb(); /* the frame and domain are valid before the flags say so */
	gnttab.table[ref].flags = GTF_permit_access | (readonly ? GTF_readonly : 0);
	return (int)ref;
}

void gnttab_end_foreign_access(grant_ref_t ref)
{
	gnttab.table[ref].flags = 0;
	spin_lock(&gnttab.lock);
	gnttab.free_list[gnttab.nfree++] = ref;
	spin_unlock(&gnttab.lock);
}

void gnttab_foreach_grant_in_range(const void *addr, unsigned int len, xen_grant_fn_t fn,
				   void *data)
{
	unsigned int offset = (unsigned int)((uintptr_t)addr & ~PAGE_MASK);

	while (len) {
		unsigned int glen = (unsigned int)PAGE_SIZE - offset < len ?
			(unsigned int)PAGE_SIZE - offset : len;

		fn(virt_to_mfn(addr), offset, glen, data);
		addr = (const unsigned char *)addr + glen;
		len -= glen;
		offset = 0;
	}
}

void *gnttab_map_grant_ref(const struct gnttab_foreign *f, grant_ref_t ref, bool write)
{
	grant_entry_v1_t e;

	if (ref == GRANT_INVALID_REF || ref >= f->nr_entries)
		return NULL;
	e.flags = f->table[ref].flags;
	rmb(); /* the flags are read before the frame they validate */
	e.domid = f->table[ref].domid;
	e.frame = f->table[ref].frame;
	if ((e.flags & GTF_type_mask) != GTF_permit_access || e.domid != 0)
		return NULL;
	if (write && (e.flags & GTF_readonly))
		return NULL;
	if (e.frame >= f->ram_pages)
		return NULL;
	return f->ram + (size_t)e.frame * PAGE_SIZE;
}
