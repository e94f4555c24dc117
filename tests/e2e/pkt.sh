# The packet fixture for the agent's end-to-end scripts (sourced; not a test
# itself): pkt_setup DIR builds tests/guestrt/fixtures/agent_pkt.c as
# DIR/pkt and writes DIR/f.xml, the plainest flow on it (a packet starts in
# pkt_alloc and quits in pkt_free); 0, or 1 when the compiler failed.
pkt_setup() {
	cc -g -O1 -o "$1/pkt" tests/guestrt/fixtures/agent_pkt.c || return 1
	cat >"$1/f.xml" <<'XML'
<flows>
<xflow name="pktflow">
  <start><pointcut>access(pkt.data) AND within_function(pkt_alloc)</pointcut></start>
  <quit><pointcut>access(pkt.%) AND within_function(pkt_free)</pointcut></quit>
</xflow>
</flows>
XML
}
