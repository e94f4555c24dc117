#!/bin/sh
# Detaching from a running host: while the agents are attached the domains'
# text differs from their files (the breakpoints); once the monitor asked
# them to detach, every executable mapping of every domain is byte for byte
# its file, no domain is traced, and the host finishes by itself with
# status 0 and a truth file that truth-check accepts.
. tests/e2e/lib.sh
e2e_need "$BUILD/sim/truth-check"
exec timeout -s TERM 60 "$BUILD/tests/e2e/xflow-e2e" detach
