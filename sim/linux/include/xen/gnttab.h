/*
 * Grant tables (drivers/xen/core/gnttab.c).
 *
 * A guest grants dom0 access to one of its page frames by filling an entry
 * of its grant table (struct grant_entry_v1 of xen/grant_table.h, in the
 * memory it shares) and passing the entry's index, the grant reference, in a
 * ring request.  Dom0 "maps" a reference by checking the entry and computing
 * the address of the frame in the guest's RAM.
 */
#ifndef SIM_XEN_GNTTAB_H
#define SIM_XEN_GNTTAB_H

#include <stdbool.h>

#include "xen/interface.h"

#define GRANT_INVALID_REF 0

/* Guest side. */
void gnttab_init(grant_entry_v1_t *table, unsigned int nr_entries);
/* A free reference granting @domid access to @frame, or -ENOSPC. */
int gnttab_grant_foreign_access(domid_t domid, unsigned long frame, int readonly);
/* Revokes the grant and frees the reference. */
void gnttab_end_foreign_access(grant_ref_t ref);

/*
 * Calls @fn for each page-sized piece of [@addr, @addr + @len) with its frame
 * number, offset and length, as Linux's gnttab_foreach_grant_in_range().
 */
typedef void (*xen_grant_fn_t)(unsigned long gfn, unsigned int offset, unsigned int len,
			       void *data);
void gnttab_foreach_grant_in_range(const void *addr, unsigned int len, xen_grant_fn_t fn,
				   void *data);

/* Dom0 side: a guest's grant table and RAM as dom0 sees them. */
struct gnttab_foreign {
	domid_t domid;
	grant_entry_v1_t *table;
	unsigned int nr_entries;
	unsigned char *ram;
	unsigned long ram_pages;
};

/*
 * The page that @ref grants to dom0, or NULL when the reference is out of
 * range, not granted to dom0, or read-only and @write is asked.
 */
void *gnttab_map_grant_ref(const struct gnttab_foreign *f, grant_ref_t ref, bool write);

#endif
