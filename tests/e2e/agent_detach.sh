#!/bin/sh
# Detaching from a running host: while the agents are attached the domains'
# text differs from their files (the breakpoints); once the monitor asked
# them to detach, every executable mapping of every domain is byte for byte
# its file, no domain is traced, and the host finishes by itself with
# status 0 and a truth file that truth-check accepts.
BUILD=${BUILD:-build}
for b in "$BUILD/tests/e2e/xflow-e2e" "$BUILD/bin/xflow-agent" "$BUILD/bin/xensim" "$BUILD/sim/truth-check"; do
	[ -x "$b" ] || { echo "missing $b"; exit 77; }
done
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
exec timeout -s TERM 60 "$BUILD/tests/e2e/xflow-e2e" detach
