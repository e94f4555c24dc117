# Helpers for the end-to-end scripts on the simulated host (sourced; not a
# test itself).  Sourcing it checks that the driver, the agent and the host
# are built (else the script is skipped, status 77) and points the driver
# at them.
BUILD=${BUILD:-build}

# Skip (77) unless every program named is built.
e2e_need() {
	for b in "$@"; do
		[ -x "$b" ] || { echo "missing $b"; exit 77; }
	done
}

e2e_need "$BUILD/tests/e2e/xflow-e2e" "$BUILD/bin/xflow-agent" "$BUILD/bin/xensim"
# The driver stops its host and agents itself, also on SIGINT/SIGTERM; the
# scripts run it under a timeout so that a hang fails instead of blocking
# make check.
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
