/*
 * A kernel site's name checked (guestrt/hook/kernel/ksite_name.h).
 */
#include <stdio.h>
#include <string.h>

#include "guestrt/hook/kernel/ksite_name.h"

static bool ident_char(char c, bool dash, bool dot)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
	       (dash && c == '-') || (dot && c == '.');
}

/* The first byte of @s[0..n) that is not a name's, or NULL. */
static const char *bad_char(const char *s, size_t n, bool dash, bool dot)
{
	for (size_t i = 0; i < n; i++)
		if (!ident_char(s[i], dash, dot))
			return s + i;
	return NULL;
}

void xk_name_quote(const char *name, char *buf, size_t len)
{
	if (!len)
		return;
	size_t at = 0, i = 0;
	buf[0] = 0;
	for (; name[i] && i < 64 && at + 5 < len; i++) {
		unsigned char c = (unsigned char)name[i];
		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"')
			buf[at++] = (char)c;
		else
			at += (size_t)snprintf(buf + at, len - at, "\\x%02x", c);
	}
	if (name[i] && at + 4 < len) {
		memcpy(buf + at, "...", 3);
		at += 3;
	}
	buf[at] = 0;
}

bool xk_site_name_ok(const char *name, bool tracepoint, char *why, size_t whylen)
{
	char q[300], none[1];
	size_t n = strnlen(name, XK_NAME_MAX + 1);
	const char *bad = NULL;
	xk_name_quote(name, q, sizeof(q));
	if (!why || !whylen)
		why = none, whylen = sizeof(none);
	if (n == 0) {
		snprintf(why, whylen, "an empty name");
		return false;
	}
	if (n > XK_NAME_MAX) {
		snprintf(why, whylen, "the name \"%s\" is longer than the kernel's %d bytes", q, XK_NAME_MAX);
		return false;
	}
	if (!tracepoint) {
		if ((name[0] >= '0' && name[0] <= '9') || name[0] == '.') {
			snprintf(why, whylen, "the function name \"%s\" begins with '%c'", q, name[0]);
			return false;
		}
		if ((bad = bad_char(name, n, false, true))) {
			snprintf(why, whylen, "the function name \"%s\" has a byte 0x%02x, which no kernel function's has",
				 q, (unsigned char)*bad);
			return false;
		}
		return true;
	}
	const char *colon = strchr(name, ':');
	if (!colon || colon == name || !colon[1]) {
		snprintf(why, whylen, "the tracepoint \"%s\" is not CATEGORY:NAME", q);
		return false;
	}
	if ((bad = bad_char(name, (size_t)(colon - name), true, false)) ||
	    (bad = bad_char(colon + 1, strlen(colon + 1), false, false))) {
		snprintf(why, whylen, "the tracepoint \"%s\" has a byte 0x%02x in its %s", q, (unsigned char)*bad,
			 bad < colon ? "category" : "name");
		return false;
	}
	return true;
}
