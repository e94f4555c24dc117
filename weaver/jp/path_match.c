/*
 * within_file() path patterns (xflow(5)).  A pattern is matched component
 * by component; "..." matches any run of whole components, none included.
 * A pattern that does not start with '/' matches the end of the path, which
 * is the same as an anchored match of ".../pattern".  Empty and "."
 * components are ignored on both sides.
 *
 * The classic wildcard algorithm with one backtrack point: on a mismatch,
 * let the most recent "..." swallow one more component.  O(n * m) at worst,
 * no recursion.
 */
#include <stdbool.h>
#include <string.h>

#include "xflow/flowlang.h"

#define MAX_COMPONENTS 256

struct comp {
	const char *s;
	size_t n;
};

static int split(const char *p, struct comp *out, int max)
{
	int n = 0;
	while (*p) {
		while (*p == '/')
			p++;
		const char *e = p + strcspn(p, "/");
		if (e > p && !(e - p == 1 && *p == '.')) {
			if (n == max)
				return -1;
			out[n++] = (struct comp){ p, (size_t)(e - p) };
		}
		p = e;
	}
	return n;
}

static bool is_dots(const struct comp *c)
{
	return c->n == 3 && memcmp(c->s, "...", 3) == 0;
}

bool xflow_path_match(const char *pattern, const char *path)
{
	struct comp pc[MAX_COMPONENTS + 1], fc[MAX_COMPONENTS];
	int np, nf;
	int off = 0;
	if (pattern[0] != '/') {
		pc[0] = (struct comp){ "...", 3 };
		off = 1;
	}
	np = split(pattern, pc + off, MAX_COMPONENTS);
	nf = split(path, fc, MAX_COMPONENTS);
	if (np < 0 || nf < 0)
		return false;
	np += off;
	int i = 0, j = 0, star = -1, mark = 0;
	while (j < nf) {
		if (i < np && is_dots(&pc[i])) {
			star = i++;
			mark = j;
		} else if (i < np && pc[i].n == fc[j].n && memcmp(pc[i].s, fc[j].s, fc[j].n) == 0) {
			i++;
			j++;
		} else if (star >= 0) {
			i = star + 1;
			j = ++mark;
		} else {
			return false;
		}
	}
	while (i < np && is_dots(&pc[i]))
		i++;
	return i == np;
}
