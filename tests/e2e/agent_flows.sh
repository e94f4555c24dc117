#!/bin/sh
# Issue 6 end to end: the simulated host with one guest, one xflow-agent per
# domain, flows/netflow.xml woven.  Every message segment of the truth file
# is a flow whose id was assigned in the guest, carried across the tx ring
# in netif_tx_request.flags bits 4-15, picked up in dom0 and ended at the
# free there; the stages the plan covers appear in the truth's order.  The
# recording advice is switched off (its hits stop within one refresh while
# the targets run on) and back on.  The checks are in tests/e2e/xflow_e2e.c.
BUILD=${BUILD:-build}
for b in "$BUILD/tests/e2e/xflow-e2e" "$BUILD/bin/xflow-agent" "$BUILD/bin/xensim" "$BUILD/sim/truth-check"; do
	[ -x "$b" ] || { echo "missing $b"; exit 77; }
done
# The driver stops its host and agents itself, also on SIGINT/SIGTERM; a
# timeout makes sure a hang fails instead of blocking make check.
export E2E_BINDIR="$BUILD/bin"
# Sanitized domains are not the code the flows were written against (the
# instrumentation moves variables out of their registers): a sanitized
# build traces the plain build's domains, the agent and monitor being the
# sanitized ones under test.
if [ "$BUILD" != build ]; then
	[ -x build/sim/linuxU ] && [ -x build/sim/linux0 ] ||
		{ echo "sanitized domains cannot be woven; build the plain tree first (make)"; exit 77; }
	export XENSIM_DIR="$(pwd)/build/sim"
fi
exec timeout -s TERM 60 "$BUILD/tests/e2e/xflow-e2e" flows --rate 200 --duration 10
