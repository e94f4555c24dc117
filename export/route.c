/*
 * What a request asks for.  Kept apart from the HTTP library so that the
 * fuzz target and the tests reach it directly.  See export/export.h.
 */
#include <string.h>

#include "export/export.h"

enum xfx_route xfx_route(const char *method, const char *url)
{
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return XFX_ROUTE_BAD_METHOD;
	/* Prometheus may add query parameters (params: in a scrape config);
	 * they change nothing here. */
	size_t n = strcspn(url, "?#");
	if (n == 8 && !memcmp(url, "/metrics", 8))
		return XFX_ROUTE_METRICS;
	if (n == 1 && url[0] == '/')
		return XFX_ROUTE_INDEX;
	return XFX_ROUTE_NOT_FOUND;
}
