# tui/replay.mk: saving a session and playing it back (--save-session, --replay).
TEST_SCRIPTS += tests/tui/replay_roundtrip.sh
