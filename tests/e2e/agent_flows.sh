#!/bin/sh
# Issue 6 end to end: the simulated host with one guest, one xflow-agent per
# domain, flows/netflow.xml woven.  Every message segment of the truth file
# is a flow whose id was assigned in the guest, carried across the tx ring
# in netif_tx_request.flags bits 4-15, picked up in dom0 and ended at the
# free there; the stages the plan covers appear in the truth's order.  The
# recording advice is switched off (its hits stop within one refresh while
# the targets run on) and back on.  The checks are in tests/e2e/xflow_e2e.c.
. tests/e2e/lib.sh
e2e_need "$BUILD/sim/truth-check"
exec timeout -s TERM 60 "$BUILD/tests/e2e/xflow-e2e" flows --duration 10
