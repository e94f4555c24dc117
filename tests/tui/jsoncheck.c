/*
 * tui-jsoncheck: exit 0 when each FILE is valid JSON (and, with -s SCHEMA,
 * valid against it); with -l, each line of each FILE is one JSON value.
 * For the shell tests, which must not need python.
 *
 *   tui-jsoncheck [-l] [-s SCHEMA] [-c KEY=N] FILE...
 *   -c traceEvents=N   the array member KEY has at least N elements
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tui/jsonlite.h"

static int check_one(const char *name, const char *text, size_t len, struct jl_value *schema,
		     const char *count_key, long count_min)
{
	struct jl_value v;
	char err[512];
	if (jl_parse(text, len, &v, err, sizeof(err))) {
		fprintf(stderr, "%s: invalid JSON: %s\n", name, err);
		return 1;
	}
	int rc = 0;
	if (schema && jl_validate(schema, schema, &v, "", err, sizeof(err))) {
		fprintf(stderr, "%s: does not match the schema: %s\n", name, err);
		rc = 1;
	}
	if (!rc && count_key) {
		const struct jl_value *a = jl_get(&v, count_key);
		if (!a || a->type != JL_ARRAY || (long)a->n < count_min) {
			fprintf(stderr, "%s: \"%s\" has %ld elements, expected at least %ld\n", name,
				count_key, a && a->type == JL_ARRAY ? (long)a->n : -1L, count_min);
			rc = 1;
		}
	}
	jl_free(&v);
	return rc;
}

int main(int argc, char **argv)
{
	int lines = 0, opt, bad = 0;
	const char *schema_path = NULL, *count_key = NULL;
	long count_min = 0;
	char countbuf[128];
	while ((opt = getopt(argc, argv, "ls:c:")) != -1) {
		switch (opt) {
		case 'l': lines = 1; break;
		case 's': schema_path = optarg; break;
		case 'c': {
			snprintf(countbuf, sizeof(countbuf), "%s", optarg);
			char *eq = strchr(countbuf, '=');
			if (!eq)
				return 2;
			*eq = '\0';
			count_key = countbuf;
			count_min = strtol(eq + 1, NULL, 10);
			break;
		}
		default:
			fprintf(stderr, "usage: tui-jsoncheck [-l] [-s SCHEMA] [-c KEY=N] FILE...\n");
			return 2;
		}
	}
	struct jl_value schema, *sp = NULL;
	if (schema_path) {
		size_t len;
		char err[512];
		char *text = jl_read_file(schema_path, &len);
		if (!text || jl_parse(text, len, &schema, err, sizeof(err))) {
			fprintf(stderr, "%s: cannot read the schema: %s\n", schema_path, text ? err : "no file");
			free(text);
			return 2;
		}
		free(text);
		sp = &schema;
	}
	if (optind >= argc)
		return 2;
	for (int i = optind; i < argc; i++) {
		size_t len;
		char *text = jl_read_file(argv[i], &len);
		if (!text) {
			fprintf(stderr, "%s: cannot read\n", argv[i]);
			bad = 1;
			continue;
		}
		if (!lines) {
			bad |= check_one(argv[i], text, len, sp, count_key, count_min);
		} else {
			size_t start = 0, nlines = 0;
			for (size_t k = 0; k <= len; k++)
				if (k == len || text[k] == '\n') {
					if (k > start) {
						char name[600];
						snprintf(name, sizeof(name), "%s:%zu", argv[i], ++nlines);
						bad |= check_one(name, text + start, k - start, sp, count_key, count_min);
					}
					start = k + 1;
				}
			if (!nlines) {
				fprintf(stderr, "%s: no JSON lines\n", argv[i]);
				bad = 1;
			}
		}
		free(text);
	}
	if (sp)
		jl_free(sp);
	return bad;
}
