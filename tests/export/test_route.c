/*
 * What a request asks for (export/route.c).
 */
#include <criterion/criterion.h>

#include "export/export.h"

Test(route, metrics_index_and_the_rest)
{
	cr_assert_eq(xfx_route("GET", "/metrics"), XFX_ROUTE_METRICS);
	cr_assert_eq(xfx_route("HEAD", "/metrics"), XFX_ROUTE_METRICS);
	cr_assert_eq(xfx_route("GET", "/metrics?match[]=up"), XFX_ROUTE_METRICS);
	cr_assert_eq(xfx_route("GET", "/"), XFX_ROUTE_INDEX);
	cr_assert_eq(xfx_route("GET", "/?x"), XFX_ROUTE_INDEX);
	cr_assert_eq(xfx_route("GET", "/metrics/"), XFX_ROUTE_NOT_FOUND);
	cr_assert_eq(xfx_route("GET", "/metricsx"), XFX_ROUTE_NOT_FOUND);
	cr_assert_eq(xfx_route("GET", ""), XFX_ROUTE_NOT_FOUND);
	cr_assert_eq(xfx_route("GET", "metrics"), XFX_ROUTE_NOT_FOUND);
	cr_assert_eq(xfx_route("POST", "/metrics"), XFX_ROUTE_BAD_METHOD);
	cr_assert_eq(xfx_route("get", "/metrics"), XFX_ROUTE_BAD_METHOD);
	cr_assert_eq(xfx_route("DELETE", "/"), XFX_ROUTE_BAD_METHOD);
}
