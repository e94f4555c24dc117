# tui/xentrace.mk: xflowtop with the xentrace collector (batch mode on the
# real capture in ../shared, compared with xenalyze --summary; the
# Hypervisor view under tmux).
TEST_SCRIPTS += tests/tui/xentrace_batch.sh tests/tui/tui_tmux_xentrace.sh
