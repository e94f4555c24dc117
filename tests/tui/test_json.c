/*
 * The JSON writer: escaping, structure, numbers; its output parses.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tui/jsonlite.h"
#include "tui/json.h"

static char *escape(const char *s, size_t n)
{
	size_t need = xft_json_escape(s, n, NULL, 0);
	char *out = malloc(need + 1);
	cr_assert(out);
	cr_assert_eq(xft_json_escape(s, n, out, need + 1), need);
	return out;
}

Test(json, escapes_quotes_backslashes_and_controls)
{
	char *e = escape("a\"b\\c\n\t\r\b\f", 10);
	cr_assert_str_eq(e, "a\\\"b\\\\c\\n\\t\\r\\b\\f");
	free(e);
	e = escape("\x01\x1f\x7f", 3);
	cr_assert_str_eq(e, "\\u0001\\u001f\\u007f");
	free(e);
	e = escape("nul\0in", 6);
	cr_assert_str_eq(e, "nul\\u0000in");
	free(e);
}

Test(json, keeps_valid_utf8_and_replaces_invalid_bytes)
{
	char *e = escape("\xc2\xb5s \xe2\x86\x92 \xf0\x9f\x98\x80", 12);
	cr_assert_str_eq(e, "\xc2\xb5s \xe2\x86\x92 \xf0\x9f\x98\x80");
	free(e);
	/* A lone continuation byte, a truncated sequence, an overlong form,
	 * a surrogate, and 0xff. */
	e = escape("\x80|\xe2\x86|\xc0\xaf|\xed\xa0\x80|\xff", 13);
	cr_assert_str_eq(e, "\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd|\\ufffd");
	free(e);
}

Test(json, escape_truncates_safely)
{
	char buf[4];
	size_t need = xft_json_escape("\"\"\"", 3, buf, sizeof(buf));
	cr_assert_eq(need, 6);
	cr_assert_eq(strlen(buf), 3);
}

static char *write_sample(int pretty)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct xft_json j;
	xft_json_init(&j, f, pretty);
	xft_json_object_begin(&j);
	xft_json_key(&j, "name \"q\"");
	xft_json_string(&j, "line1\nline2 \xff");
	xft_json_key(&j, "n");
	xft_json_u64(&j, UINT64_MAX);
	xft_json_key(&j, "neg");
	xft_json_i64(&j, INT64_MIN);
	xft_json_key(&j, "d");
	xft_json_double(&j, 0.25);
	xft_json_key(&j, "nan");
	xft_json_double(&j, NAN);
	xft_json_key(&j, "inf");
	xft_json_double(&j, INFINITY);
	xft_json_key(&j, "empty");
	xft_json_array_begin(&j);
	xft_json_array_end(&j);
	xft_json_key(&j, "list");
	xft_json_array_begin(&j);
	xft_json_bool(&j, 1);
	xft_json_null(&j);
	xft_json_object_begin(&j);
	xft_json_object_end(&j);
	xft_json_string(&j, NULL);
	xft_json_array_end(&j);
	xft_json_object_end(&j);
	cr_assert_eq(xft_json_end(&j), 0);
	fclose(f);
	return text;
}

Test(json, output_parses_and_round_trips)
{
	for (int pretty = 0; pretty < 2; pretty++) {
		char *text = write_sample(pretty);
		struct jl_value v;
		char err[160];
		cr_assert_eq(jl_parse(text, strlen(text), &v, err, sizeof(err)), 0, "%s: %s", err, text);
		cr_assert_str_eq(jl_get(&v, "name \"q\"")->string, "line1\nline2 \xef\xbf\xbd");
		cr_assert_eq(jl_get(&v, "nan")->type, JL_NULL);
		cr_assert_eq(jl_get(&v, "inf")->type, JL_NULL);
		cr_assert_eq(jl_get(&v, "d")->number, 0.25);
		cr_assert_eq(jl_get(&v, "list")->n, 4);
		cr_assert_eq(jl_get(&v, "empty")->n, 0);
		if (!pretty)
			cr_assert(strstr(text, "\"n\":18446744073709551615"), "%s", text);
		jl_free(&v);
		free(text);
	}
}

Test(json, unbalanced_structure_is_an_error)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct xft_json j;
	xft_json_init(&j, f, 0);
	xft_json_array_begin(&j);
	cr_assert_neq(xft_json_end(&j), 0);
	xft_json_init(&j, f, 0);
	xft_json_object_end(&j);
	cr_assert_neq(xft_json_error(&j), 0);
	fclose(f);
	free(text);
}

Test(json, write_errors_are_sticky)
{
	FILE *f = fopen("/dev/full", "w");
	if (!f)
		cr_skip("no /dev/full");
	setvbuf(f, NULL, _IONBF, 0);
	struct xft_json j;
	xft_json_init(&j, f, 0);
	xft_json_string(&j, "x");
	cr_assert_neq(xft_json_end(&j), 0);
	fclose(f);
}

Test(json, checker_rejects_bad_json)
{
	static const char *const bad[] = { "{", "[1,]", "{\"a\" 1}", "01", "1.", "\"\x01\"", "\"\\x\"",
					   "\"\xff\"", "[1] x", "\"\\ud800\"", "nul", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct jl_value v;
		char err[160];
		cr_assert_neq(jl_parse(bad[i], strlen(bad[i]), &v, err, sizeof(err)), 0, "%s", bad[i]);
	}
}
