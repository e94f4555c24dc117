/* What a kernel knows about the domain it runs in. */
#ifndef SIM_XEN_HYPERVISOR_H
#define SIM_XEN_HYPERVISOR_H

#include <stdbool.h>
#include <stdint.h>

/* Set at boot from the domain's start info. */
extern uint32_t xen_domid;

/* True in dom0, the domain that runs the backends and the real drivers. */
static inline bool is_initial_xendomain(void)
{
	return xen_domid == 0;
}

#endif
