/*
 * The XML layer: well-formedness, exact positions, decoded text.
 */
#include "wtest.h"
#include "weaver/lang/unit.h"

struct loaded {
	struct xflow_unit *u;
	struct fl_xdoc doc;
	int rc;
	char *diags;
};

static struct loaded load(const char *xml)
{
	struct loaded l;
	xflow_unit_new(&l.u, NULL);
	l.rc = fl_xml_load(&l.u->arena, &l.u->diag, "x.xml", xml, strlen(xml), &l.doc);
	l.diags = wt_diags(l.u);
	return l;
}

static void unload(struct loaded *l)
{
	free(l->diags);
	xflow_unit_free(l->u);
}

static void linecol(struct fl_loc loc, unsigned *line, unsigned *col)
{
	fl_loc_linecol(loc, line, col);
}

Test(xml_load, figure4_as_printed)
{
	struct loaded l = load("<xflow name=\"netflow\">\n<transit>\n"
			       "<xin_move name=\"netin\" from=\"skb\" to=\"tx\" />\n"
			       "<field name=\"flags\" offset=\"4\" size=\"12\" />\n"
			       "  </xen_move>\n</transit>\n</xflow>\n");
	cr_expect_eq(l.rc, -EINVAL);
	cr_expect(strstr(l.diags, "x.xml:5:3: error: closing tag </xen_move> does not match <transit> opened at line 2"),
		  "%s", l.diags);
	cr_expect(strstr(l.diags, "<xin_move .../> is self-closing and <field> follows as its sibling"), "%s", l.diags);
	unload(&l);
}

Test(xml_load, other_mismatches_get_a_plain_hint)
{
	struct loaded l = load("<a>\n <b></c>\n</a>");
	cr_expect(strstr(l.diags, "x.xml:2:5: error: closing tag </c> does not match <b> opened at line 2"), "%s", l.diags);
	cr_expect(strstr(l.diags, "note: close <b> with </b>"), "%s", l.diags);
	unload(&l);
}

Test(xml_load, positions_of_elements_and_attributes)
{
	struct loaded l = load("<flows>\n  <xflow\n\tname = 'n'>\n    <start/>\n  </xflow>\n</flows>");
	cr_assert_eq(l.rc, 0, "%s", l.diags);
	struct fl_xnode *x = l.doc.root->kids[0];
	unsigned line, col;
	linecol(x->loc, &line, &col);
	cr_expect(line == 2 && col == 3, "xflow at %u:%u", line, col);
	linecol(x->attrs[0].loc, &line, &col);
	cr_expect(line == 3 && col == 2, "name at %u:%u", line, col);
	linecol(x->attrs[0].vloc, &line, &col);
	cr_expect(line == 3 && col == 10, "value at %u:%u", line, col);
	cr_expect_str_eq(x->attrs[0].value, "n");
	linecol(x->kids[0]->loc, &line, &col);
	cr_expect(line == 4 && col == 5, "start at %u:%u", line, col);
	unload(&l);
}

Test(xml_load, text_is_decoded_with_a_map_back_to_the_file)
{
	struct loaded l = load("<before>a &lt;&lt; 4 <!-- x --><![CDATA[<b>]]>&#65;&#x42;<k/>c</before>");
	cr_assert_eq(l.rc, 0, "%s", l.diags);
	const struct fl_xnode *n = l.doc.root;
	cr_expect_str_eq(n->text, "a << 4 <b>ABc");
	/* The second '<' came from the second &lt;, at byte 14. */
	cr_expect_eq(n->tmap[2], 10);
	cr_expect_eq(n->tmap[3], 14);
	/* 'c' follows the child element <k/>. */
	cr_expect_eq(n->text[12], 'c');
	cr_expect_eq(n->tmap[12], strstr("<before>a &lt;&lt; 4 <!-- x --><![CDATA[<b>]]>&#65;&#x42;<k/>c</before>", "c</") -
			       "<before>a &lt;&lt; 4 <!-- x --><![CDATA[<b>]]>&#65;&#x42;<k/>c</before>");
	unload(&l);
}

Test(xml_load, refuses_doctype_and_entities)
{
	struct loaded l = load("<!DOCTYPE x [<!ENTITY a \"aaaa\">]>\n<x>&a;</x>");
	cr_expect_eq(l.rc, -EINVAL);
	cr_expect(strstr(l.diags, "x.xml:1:1: error: a DOCTYPE is not allowed in a flow file"), "%s", l.diags);
	unload(&l);
	l = load("<x>&nope;</x>");
	cr_expect_eq(l.rc, -EINVAL);
	cr_expect(strstr(l.diags, "malformed XML"), "%s", l.diags);
	unload(&l);
}

Test(xml_load, malformed_inputs)
{
	static const char *const bad[] = { "", "   ", "<a>", "<a></a><b/>", "<a b='1' b='2'/>",
					   "<a\xff/>", "x", "<a>\x01</a>", "<?xml version='1.0'?>" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct loaded l = load(bad[i]);
		cr_expect_eq(l.rc, -EINVAL, "accepted %s", bad[i]);
		cr_expect(strstr(l.diags, "error: malformed XML"), "%s: %s", bad[i], l.diags);
		unload(&l);
	}
}

Test(xml_load, depth_is_bounded)
{
	char buf[4096] = "";
	for (int i = 0; i < 40; i++)
		strcat(buf, "<a>");
	for (int i = 0; i < 40; i++)
		strcat(buf, "</a>");
	struct loaded l = load(buf);
	cr_expect_eq(l.rc, -EINVAL);
	cr_expect(strstr(l.diags, "elements nested deeper than 32"), "%s", l.diags);
	unload(&l);
}

Test(xml_load, any_declared_encoding_is_read_as_utf8)
{
	struct loaded l = load("<?xml version='1.0' encoding='ISO-8859-1'?>\n<a>\xc3\xa9</a>");
	cr_assert_eq(l.rc, 0, "%s", l.diags);
	cr_expect_str_eq(l.doc.root->text, "\xc3\xa9");
	unload(&l);
}

Test(xml_load, other_encodings_are_not_guessed)
{
	/* UTF-16 with a BOM: read as the UTF-8 it is not, never converted. */
	static const char u16[] = "\xff\xfe<\0a\0/\0>\0";
	struct xflow_unit *u;
	xflow_unit_new(&u, NULL);
	struct fl_xdoc doc;
	cr_expect_eq(fl_xml_load(&u->arena, &u->diag, "x.xml", u16, sizeof(u16) - 1, &doc), -EINVAL);
	char *d = wt_diags(u);
	cr_expect(strstr(d, "x.xml:1:1: error: malformed XML"), "%s", d);
	free(d);
	xflow_unit_free(u);
}

/* Every line printed is a diagnostic with its place: none of libxml2's
 * messages may spill onto a second line. */
static void expect_one_line_each(const char *diags)
{
	const char *p = diags;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		cr_expect(strncmp(p, "x.xml:", 6) == 0, "a line without a place: %.*s\nin:\n%s", (int)n, p, diags);
		p += n + (nl != NULL);
	}
}

/* A file that is not UTF-8 (Latin-1 here, whatever it declares): one
 * error at the first bad byte, on one line, saying what to do. */
Test(xml_load, non_utf8_is_one_diagnostic)
{
	static const char *const files[] = {
		"<flows>\n<!-- caf\xe9 -->\n</flows>\n",
		"<?xml version='1.0' encoding='ISO-8859-1'?>\n<flows>\n<!-- caf\xe9 -->\n</flows>\n",
		"<flows>\n<!-- \xed\xa0\x80 -->\n</flows>\n", /* a UTF-16 surrogate, encoded */
	};
	static const unsigned lines[] = { 2, 3, 2 }, cols[] = { 9, 9, 6 };
	static const char *const bytes[] = { "0xE9", "0xE9", "0xED" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct loaded l = load(files[i]);
		cr_expect_eq(l.rc, -EINVAL);
		char want[128];
		snprintf(want, sizeof(want), "x.xml:%u:%u: error: malformed XML: byte %s is not UTF-8\n", lines[i],
			 cols[i], bytes[i]);
		cr_expect(strstr(l.diags, want), "want %s in:\n%s", want, l.diags);
		cr_expect(strstr(l.diags, "note: flow files are read as UTF-8"), "%s", l.diags);
		expect_one_line_each(l.diags);
		unload(&l);
	}
}

/* Attributes are placed by one walk of the raw tag: a value that holds a
 * name, '=', '>' or the other quote, and a namespace declaration libxml2
 * leaves out of the list, do not throw it off. */
Test(xml_load, attribute_positions_in_one_walk)
{
	static const char xml[] = "<field xmlns:q='urn:x' name='offset = 1 > \"x\"' offset=\"4\"\n  q:size='12'/>";
	struct loaded l = load(xml);
	cr_assert_eq(l.rc, 0, "%s", l.diags);
	const struct fl_xnode *n = l.doc.root;
	cr_assert_eq(n->nattrs, 3);
	static const char *const names[] = { "name", "offset", "q:size" };
	static const char *const at[] = { "name='", "offset=\"", "q:size=" };
	for (size_t i = 0; i < 3; i++) {
		cr_expect_str_eq(n->attrs[i].name, names[i]);
		size_t want = (size_t)(strstr(xml, at[i]) - xml);
		cr_expect_eq(n->attrs[i].loc.off, want, "%s at %u, want %zu", names[i], n->attrs[i].loc.off, want);
		cr_expect_eq(n->attrs[i].vloc.off, want + strcspn(xml + want, "'\"") + 1, "%s's value", names[i]);
	}
	unload(&l);
}

/* An element may have FL_XML_MAX_ATTRS attributes; past that it is refused
 * before libxml2, which is quadratic in them, reads the tag. */
Test(xml_load, attributes_are_bounded)
{
	static const unsigned counts[] = { FL_XML_MAX_ATTRS, FL_XML_MAX_ATTRS + 1, 100000 };
	for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
		unsigned n = counts[k];
		struct fl_buf b = { 0 };
		fl_buf_puts(&b, "<flows>\n<xflow");
		for (unsigned i = 0; i < n; i++)
			fl_buf_printf(&b, " a%u='>=%u'", i, i);
		fl_buf_puts(&b, "/>\n</flows>\n");
		struct loaded l = load(b.s);
		if (n == FL_XML_MAX_ATTRS) {
			cr_expect_eq(l.rc, 0, "%s", l.diags);
			cr_expect_eq(l.doc.root->kids[0]->nattrs, FL_XML_MAX_ATTRS);
		} else {
			cr_expect_eq(l.rc, -EINVAL);
			cr_expect(strstr(l.diags, "x.xml:2:1: error: <xflow> has more than 64 attributes, the most an "
						  "element may have\n"), "%u: %.300s", n, l.diags);
		}
		unload(&l);
		fl_buf_free(&b);
	}
}
