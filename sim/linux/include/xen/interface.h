/*
 * The Xen public I/O interface, exactly as Debian's libxen-dev ships it, plus
 * the few definitions a guest kernel provides before including it.
 *
 * ring.h expects the includer to supply the integer types and, for the
 * legacy interface version a guest gets by default, the Linux barrier names
 * mb()/rmb()/wmb() that its xen_mb()/xen_rmb()/xen_wmb() expand to.  Our
 * "domains" are processes on one SMP host, so the barriers are the C11
 * fences that give the same guarantees as Linux's smp_*() on x86:
 *
 *   wmb()  orders the ring entry stores before the producer index store;
 *   rmb()  orders the producer index load before the ring entry loads;
 *   mb()   orders the producer index store before the load of the other
 *          end's *_event field (the notification hold-off check), the only
 *          store->load ordering the protocol needs.
 *
 * The fences are also compiler barriers, so ring indexes in shared memory are
 * re-read after each one, as READ_ONCE() would force in newer kernels.
 */
#ifndef SIM_XEN_INTERFACE_H
#define SIM_XEN_INTERFACE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define mb()  atomic_thread_fence(memory_order_seq_cst)
#define rmb() atomic_thread_fence(memory_order_acquire)
#define wmb() atomic_thread_fence(memory_order_release)

#include <xen/grant_table.h>
#include <xen/io/ring.h>
#include <xen/io/netif.h>
#include <xen/io/blkif.h>

#define PAGE_SHIFT 12
#define PAGE_SIZE (1UL << PAGE_SHIFT)
#define PAGE_MASK (~(PAGE_SIZE - 1))

#define NET_TX_RING_SIZE __CONST_RING_SIZE(netif_tx, PAGE_SIZE)
#define NET_RX_RING_SIZE __CONST_RING_SIZE(netif_rx, PAGE_SIZE)
#define BLK_RING_SIZE __CONST_RING_SIZE(blkif, PAGE_SIZE)

/*
 * The bits of netif_tx_request.flags that Linux defines (csum_blank,
 * data_validated, more_data, extra_info).  Bits 4-15 are left free: a tracer
 * may carry a flow id there, so netback must look at these bits only.
 */
#define NETTXF_KNOWN_MASK \
	(NETTXF_csum_blank | NETTXF_data_validated | NETTXF_more_data | NETTXF_extra_info)

#endif
