# The exporter's tests beyond the unit tests: a load tool for the /metrics
# server, the load test (1,000 connections, refresh with scrapes against
# without), the slowloris test (scrapes answered while 64 connections
# trickle their requests), and the end-to-end test with a real Prometheus
# scraping two simulated hosts (tests/export/).
XFX_FLOOD := $(TESTDIR)/export/xfx-flood
ALL_OBJS += $(OBJDIR)/tests/export/xfx_flood.o
TEST_PROGS += $(XFX_FLOOD)
$(XFX_FLOOD): $(OBJDIR)/tests/export/xfx_flood.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(XLDFLAGS) $(LDFLAGS) -o $@ $^ -lpthread
TEST_SCRIPTS += tests/export/exporter_load.sh tests/export/exporter_slowloris.sh tests/export/prometheus_e2e.sh
