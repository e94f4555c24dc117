/*
 * The XML layer: the one file that includes libxml2.
 *
 * libxml2 checks well-formedness and decodes attribute values through its
 * SAX2 interface; we build our own tree so libxml2 types never leave this
 * file.  libxml2 gives lines but no columns, so positions are taken from
 * the parser's byte offset inside each callback and refined against the raw
 * bytes (the '<' of a start tag, the "</" of a mismatched end tag).  Element
 * text is decoded here from the raw bytes rather than from libxml2's
 * character callbacks, so every decoded byte keeps its offset in the file.
 *
 * Hostile input: no network (XML_PARSE_NONET), no DTD at all (a DOCTYPE
 * stops the parse, which also rules out entity expansion attacks), depth
 * limited to FL_XML_MAX_DEPTH, and the document is taken as UTF-8 whatever
 * its declaration says, so byte offsets match the raw buffer.
 */
#include "weaver/lang/xml.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/xmlerror.h>

struct load {
	struct fl_arena *arena;
	struct fl_diag *d;
	const struct fl_src *src;
	xmlParserCtxtPtr ctxt;
	struct fl_xnode *root;
	struct fl_xnode *cur;   /* innermost open element */
	int depth;
	bool failed;
};

static size_t parser_offset(struct load *L)
{
	long off = xmlByteConsumed(L->ctxt);
	if (off < 0)
		return 0;
	if ((size_t)off > L->src->len)
		return L->src->len;
	return (size_t)off;
}

static void stop(struct load *L)
{
	L->failed = true;
	xmlStopParser(L->ctxt);
}

/* Offset of the last '<' at or before @off (the start of the tag the parser
 * has just read: attribute values cannot contain a raw '<'). */
static size_t tag_start(const struct fl_src *src, size_t off)
{
	size_t i = off < src->len ? off : src->len;
	while (i > 0 && src->text[i] != '<')
		i--;
	return i;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/*
 * One attribute of the raw start tag, after @*pos (which it moves past
 * it): its name's span and its value's first byte.  False at the end of
 * the tag.  libxml2 has accepted the tag, so it is well-formed: names,
 * '=', a quoted value that may hold '>' but not its own quote.
 */
static bool raw_attr_next(const struct fl_src *src, size_t *pos, size_t end, size_t *name,
			  size_t *nlen, size_t *value)
{
	const char *t = src->text;
	size_t i = *pos;
	while (i < end && is_space(t[i]))
		i++;
	if (i >= end || t[i] == '>' || t[i] == '/')
		return false;
	*name = i;
	while (i < end && !is_space(t[i]) && t[i] != '=')
		i++;
	*nlen = i - *name;
	while (i < end && t[i] != '\'' && t[i] != '"')
		i++;
	if (i >= end)
		return false;
	char q = t[i++];
	*value = i;
	while (i < end && t[i] != q)
		i++;
	*pos = i + 1;
	return true;
}
static void on_start(void *ctx, const xmlChar *localname, const xmlChar *prefix,
		     const xmlChar *uri, int nb_ns, const xmlChar **ns,
		     int nb_attributes, int nb_defaulted, const xmlChar **attrs)
{
	struct load *L = ctx;
	(void)uri;
	(void)nb_ns;
	(void)ns;
	(void)nb_defaulted;
	if (L->failed)
		return;
	/* The parser stands on the '>' or "/>" that ends this start tag. */
	size_t here = parser_offset(L);
	size_t start = tag_start(L->src, here);
	struct fl_xnode *n = fl_arena_alloc(L->arena, sizeof(*n));
	n->name = prefix ? fl_arena_printf(L->arena, "%s:%s", prefix, localname)
			 : fl_arena_strdup(L->arena, (const char *)localname);
	n->loc = fl_loc_at(L->src, start, strlen(n->name) + 1);
	n->end_loc = n->loc;
	n->content_off = (uint32_t)(here < L->src->len && L->src->text[here] == '>' ? here + 1 : here);
	n->parent = L->cur;
	n->depth = ++L->depth;
	if (n->depth > FL_XML_MAX_DEPTH) {
		fl_error(L->d, n->loc, "flatten the file; flows are never this deep",
			 "elements nested deeper than %d", FL_XML_MAX_DEPTH);
		stop(L);
		return;
	}
	/* libxml2 gives the attributes in the order written, namespace
	 * declarations left out: one walk of the raw tag places them all. */
	size_t pos = start + 1 + strlen(n->name);
	for (int i = 0; i < nb_attributes; i++) {
		const xmlChar *const *a = attrs + 5 * i;
		struct fl_xattr at = { 0 };
		at.name = a[1] ? fl_arena_printf(L->arena, "%s:%s", a[1], a[0])
			       : fl_arena_strdup(L->arena, (const char *)a[0]);
		at.value = fl_arena_strndup(L->arena, (const char *)a[3],
					    (size_t)(a[4] - a[3]));
		at.loc = at.vloc = n->loc;
		size_t nm, nl, val, len = strlen(at.name);
		while (raw_attr_next(L->src, &pos, here, &nm, &nl, &val)) {
			if (nl == len && memcmp(L->src->text + nm, at.name, len) == 0) {
				at.loc = fl_loc_at(L->src, nm, nl);
				at.vloc = fl_loc_at(L->src, val, 1);
				break;
			}
		}
		FL_PUSH(L->arena, n->attrs, n->nattrs, n->attrs_cap, at);
	}
	if (L->cur)
		FL_PUSH(L->arena, L->cur->kids, L->cur->nkids, L->cur->kids_cap, n);
	else
		L->root = n;
	L->cur = n;
}

static void utf8_put(char *out, size_t *o, unsigned long c)
{
	if (c < 0x80) {
		out[(*o)++] = (char)c;
	} else if (c < 0x800) {
		out[(*o)++] = (char)(0xc0 | (c >> 6));
		out[(*o)++] = (char)(0x80 | (c & 0x3f));
	} else if (c < 0x10000) {
		out[(*o)++] = (char)(0xe0 | (c >> 12));
		out[(*o)++] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[(*o)++] = (char)(0x80 | (c & 0x3f));
	} else {
		out[(*o)++] = (char)(0xf0 | (c >> 18));
		out[(*o)++] = (char)(0x80 | ((c >> 12) & 0x3f));
		out[(*o)++] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[(*o)++] = (char)(0x80 | (c & 0x3f));
	}
}

/* Decode one predefined entity or character reference at t[i] ('&'); the
 * parser has already accepted it, so only these forms can occur. */
static size_t decode_ref(const char *t, size_t i, size_t end, char *out, size_t *o)
{
	static const struct { const char *name; char c; } pre[] = {
		{ "lt;", '<' }, { "gt;", '>' }, { "amp;", '&' },
		{ "quot;", '"' }, { "apos;", '\'' },
	};
	for (size_t k = 0; k < sizeof(pre) / sizeof(pre[0]); k++) {
		size_t n = strlen(pre[k].name);
		if (i + 1 + n <= end && memcmp(t + i + 1, pre[k].name, n) == 0) {
			out[(*o)++] = pre[k].c;
			return 1 + n;
		}
	}
	if (i + 2 < end && t[i + 1] == '#') {
		size_t j = i + 2;
		int base = 10;
		if (t[j] == 'x') {
			base = 16;
			j++;
		}
		unsigned long c = 0;
		while (j < end && t[j] != ';') {
			int v = t[j] >= '0' && t[j] <= '9' ? t[j] - '0'
				: t[j] >= 'a' && t[j] <= 'f' ? t[j] - 'a' + 10
				: t[j] >= 'A' && t[j] <= 'F' ? t[j] - 'A' + 10 : 99;
			if (v >= base || c > 0x10ffff)
				break;
			c = c * (unsigned long)base + (unsigned long)v;
			j++;
		}
		if (j < end && t[j] == ';' && c <= 0x10ffff) {
			utf8_put(out, o, c);
			return j + 1 - i;
		}
	}
	out[(*o)++] = '&';
	return 1;
}

static const char *find(const char *t, size_t from, size_t end, const char *pat)
{
	size_t n = strlen(pat);
	for (size_t i = from; i + n <= end; i++)
		if (memcmp(t + i, pat, n) == 0)
			return t + i;
	return NULL;
}

/* Decode the raw bytes [from, to) of an element's content into n->text,
 * skipping the byte ranges of its child elements. */
static void decode_text(struct load *L, struct fl_xnode *n, size_t to)
{
	const char *t = L->src->text;
	size_t from = n->content_off;
	if (to < from)
		to = from;
	/* A character reference never decodes to more bytes than it takes. */
	char *out = fl_arena_alloc(L->arena, to - from + 1);
	uint32_t *map = fl_arena_alloc(L->arena, (to - from + 1) * sizeof(*map));
	size_t o = 0, k = 0;
	size_t i = from;
	while (i < to) {
		if (k < n->nkids && i == n->kids[k]->loc.off) {
			i = n->kids[k++]->end_off;
			continue;
		}
		if (t[i] == '<') {
			const char *e;
			if (i + 4 <= to && memcmp(t + i, "<!--", 4) == 0) {
				e = find(t, i + 4, to, "-->");
				i = e ? (size_t)(e - t) + 3 : to;
			} else if (i + 9 <= to && memcmp(t + i, "<![CDATA[", 9) == 0) {
				e = find(t, i + 9, to, "]]>");
				size_t stop_at = e ? (size_t)(e - t) : to;
				for (i += 9; i < stop_at; i++) {
					map[o] = (uint32_t)i;
					out[o++] = t[i];
				}
				i = e ? stop_at + 3 : to;
			} else if (i + 2 <= to && t[i + 1] == '?') {
				e = find(t, i + 2, to, "?>");
				i = e ? (size_t)(e - t) + 2 : to;
			} else {
				i++;   /* unreachable for well-formed input */
			}
			continue;
		}
		if (t[i] == '&') {
			size_t before = o;
			size_t used = decode_ref(t, i, to, out, &o);
			for (size_t q = before; q < o; q++)
				map[q] = (uint32_t)i;
			i += used;
			continue;
		}
		map[o] = (uint32_t)i;
		out[o++] = t[i++];
	}
	map[o] = (uint32_t)to;
	out[o] = '\0';
	n->text = out;
	n->tlen = o;
	n->tmap = map;
}

static void on_end(void *ctx, const xmlChar *localname, const xmlChar *prefix,
		   const xmlChar *uri)
{
	struct load *L = ctx;
	(void)localname;
	(void)prefix;
	(void)uri;
	if (L->failed || !L->cur)
		return;
	struct fl_xnode *n = L->cur;
	size_t here = parser_offset(L);
	if (here < L->src->len && L->src->text[here] == '/') {
		/* Self-closing: the parser stands on "/>". */
		n->end_off = (uint32_t)(here + 2);
		n->content_off = (uint32_t)here;
		decode_text(L, n, here);
	} else {
		/* The parser has read "</name>" and stands after it. */
		size_t lt = tag_start(L->src, here ? here - 1 : 0);
		n->end_off = (uint32_t)here;
		n->end_loc = fl_loc_at(L->src, lt, here - lt);
		decode_text(L, n, lt);
	}
	L->cur = n->parent;
	L->depth--;
}

static void on_internal_subset(void *ctx, const xmlChar *name,
			       const xmlChar *ext_id, const xmlChar *sys_id)
{
	struct load *L = ctx;
	(void)name;
	(void)ext_id;
	(void)sys_id;
	if (L->failed)
		return;
	size_t off = tag_start(L->src, parser_offset(L));
	const char *p = find(L->src->text, 0, L->src->len, "<!DOCTYPE");
	if (p)
		off = (size_t)(p - L->src->text);
	fl_error(L->d, fl_loc_at(L->src, off, 9), "delete the DOCTYPE; flow files use no DTD",
		 "a DOCTYPE is not allowed in a flow file");
	stop(L);
}

/* libxml2's message on one line: some span two ("...indicate encoding !\n
 * Bytes: 0xE9 ..."), and a diagnostic is one line.  Line breaks inside
 * become "; ", trailing ones go. */
static const char *one_line(struct load *L, const char *msg)
{
	struct fl_buf b = { 0 };
	for (const char *p = msg ? msg : ""; *p; p++) {
		if (*p != '\n' && *p != '\r') {
			fl_buf_putc(&b, *p);
			continue;
		}
		while (b.len && b.s[b.len - 1] == ' ')
			b.len--;
		while (p[1] == '\n' || p[1] == '\r' || p[1] == ' ')
			p++;
		if (p[1] && b.len)
			fl_buf_puts(&b, "; ");
	}
	while (b.len && b.s[b.len - 1] == ' ')
		b.len--;
	const char *r = fl_arena_strndup(L->arena, b.s ? b.s : "", b.len);
	fl_buf_free(&b);
	return r;
}

/* Offset of the first byte of @src that does not start or continue a
 * well-formed UTF-8 sequence (overlong forms, surrogates and code points
 * past U+10FFFF included), or SIZE_MAX if it is all UTF-8. */
static size_t utf8_first_bad(const struct fl_src *src)
{
	const unsigned char *t = (const unsigned char *)src->text;
	size_t n = src->len;
	for (size_t i = 0; i < n;) {
		unsigned c = t[i];
		size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
		if (!len || i + len > n)
			return i;
		unsigned long cp = len == 1 ? c : c & (0x7fu >> len);
		for (size_t k = 1; k < len; k++) {
			if ((t[i + k] & 0xc0) != 0x80)
				return i;
			cp = cp << 6 | (t[i + k] & 0x3f);
		}
		static const unsigned long min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
		if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return i;
		i += len;
	}
	return SIZE_MAX;
}

static void on_error(void *ctx, xmlErrorPtr e)
{
	struct load *L = ctx;
	if (L->failed || !e || e->level < XML_ERR_ERROR)
		return;
	size_t off = parser_offset(L);
	size_t bad = e->code == XML_ERR_INVALID_CHAR ? utf8_first_bad(L->src) : SIZE_MAX;
	if (e->code == XML_ERR_TAG_NAME_MISMATCH && e->str1 && e->str2) {
		/* The parser has read the whole end tag: point at its "</". */
		size_t lt = tag_start(L->src, off ? off - 1 : 0);
		const char *closing = e->str2, *open = e->str1;
		struct fl_buf hint = { 0 };
		if (strcmp(closing, "xen_move") == 0 || strncmp(closing, "xin_", 4) == 0 ||
		    strncmp(closing, "xen_", 4) == 0)
			fl_buf_printf(&hint,
				      "<xin_move .../> is self-closing and <field> follows as its "
				      "sibling: delete </%s> (or write <xin_move ...><field .../></xin_move>)",
				      closing);
		else
			fl_buf_printf(&hint, "close <%s> with </%s>", open, open);
		fl_error(L->d, fl_loc_at(L->src, lt, strlen(closing) + 3), hint.s,
			 "closing tag </%s> does not match <%s> opened at line %d",
			 closing, open, e->int1);
		fl_buf_free(&hint);
	} else if (bad != SIZE_MAX) {
		/* libxml2 says "indicate encoding", but a declared encoding is
		 * ignored here (offsets must stay byte offsets): say what is
		 * wrong in the file instead. */
		fl_error(L->d, fl_loc_at(L->src, bad, 1),
			 "flow files are read as UTF-8 whatever they declare: convert the file "
			 "(iconv -f LATIN1 -t UTF-8, say)",
			 "malformed XML: byte 0x%02X is not UTF-8", (unsigned char)L->src->text[bad]);
	} else {
		if (off >= L->src->len && L->src->len > 0)
			off = L->src->len - 1;
		fl_error(L->d, fl_loc_at(L->src, off, 1),
			 "a flow file must be well-formed XML",
			 "malformed XML: %s", one_line(L, e->message));
	}
	stop(L);
}

/*
 * The first start tag of @src with more than FL_XML_MAX_ATTRS attributes:
 * its offset, or SIZE_MAX.  One pass over the raw bytes that skips what
 * cannot hold a start tag (text, comments, CDATA, processing instructions,
 * declarations) and counts, inside a tag, the '=' outside quoted values.
 * On well-formed XML that is the attribute count; on anything else
 * libxml2 stops at the first error, before it could be slow.
 */
static size_t tag_over_attrs(const struct fl_src *src)
{
	const char *t = src->text;
	size_t n = src->len;
	for (size_t i = 0; i < n; i++) {
		if (t[i] != '<')
			continue;
		const char *close = NULL;
		if (i + 4 <= n && memcmp(t + i, "<!--", 4) == 0)
			close = "-->";
		else if (i + 9 <= n && memcmp(t + i, "<![CDATA[", 9) == 0)
			close = "]]>";
		else if (i + 1 < n && t[i + 1] == '?')
			close = "?>";
		if (close) {
			const char *e = find(t, i + 2, n, close);
			if (!e)
				return SIZE_MAX;
			i = (size_t)(e - t);
			continue;
		}
		if (i + 1 < n && (t[i + 1] == '/' || t[i + 1] == '!'))
			continue;
		size_t tag = i;
		unsigned eq = 0;
		char q = 0;
		for (i++; i < n && (q || t[i] != '>'); i++) {
			if (q)
				q = t[i] == q ? 0 : q;
			else if (t[i] == '"' || t[i] == '\'')
				q = t[i];
			else if (t[i] == '=' && ++eq > FL_XML_MAX_ATTRS)
				return tag;
		}
	}
	return SIZE_MAX;
}

int fl_xml_load(struct fl_arena *arena, struct fl_diag *d, const char *path,
		const char *buf, size_t len, struct fl_xdoc *out)
{
	struct load L = { .arena = arena, .d = d };
	struct fl_src *src = fl_src_new(arena, path, buf, len);
	src->seq = ++d->nsrcs;
	out->src = L.src = src;
	out->root = NULL;
	if (len > INT_MAX) {
		fl_error(d, fl_loc_at(L.src, 0, 1), "split it into files that <include> each other", "file too large");
		return -EFBIG;
	}
	size_t many = tag_over_attrs(L.src);
	if (many != SIZE_MAX) {
		/* The source's copy is NUL-terminated; @buf need not be. */
		const char *name = L.src->text + many + 1;
		size_t nl = strcspn(name, " \t\r\n/>");
		fl_error(d, fl_loc_at(L.src, many, nl + 1), "flow elements take at most three attributes",
			 "<%.*s> has more than %d attributes, the most an element may have",
			 (int)(nl < 64 ? nl : 64), name, FL_XML_MAX_ATTRS);
		return -EINVAL;
	}
	/* libxml2 refuses an empty buffer outright; say why ourselves. */
	xmlParserCtxtPtr ctxt = len ? xmlCreateMemoryParserCtxt(buf, (int)len) : NULL;
	if (!ctxt) {
		fl_error(d, fl_loc_at(L.src, 0, 1), "a flow file must be well-formed XML",
			 "malformed XML: %s", len ? "cannot start the parser" : "the file is empty");
		return -EINVAL;
	}
	L.ctxt = ctxt;
	xmlSAXHandler sax;
	memset(&sax, 0, sizeof(sax));
	sax.initialized = XML_SAX2_MAGIC;
	sax.startElementNs = on_start;
	sax.endElementNs = on_end;
	sax.internalSubset = on_internal_subset;
	sax.serror = on_error;
	/* Replace the default handler; libxml2 frees ctxt->sax with the ctxt. */
	memcpy(ctxt->sax, &sax, sizeof(sax));
	ctxt->userData = &L;
	xmlCtxtUseOptions(ctxt, XML_PARSE_NONET | XML_PARSE_NOCDATA | XML_PARSE_IGNORE_ENC |
				XML_PARSE_NOWARNING | XML_PARSE_NOERROR);
	/* A preset encoding stops libxml2 from guessing one from the first
	 * bytes (UTF-16, UCS-4, EBCDIC) and converting: that would move every
	 * offset, and its conversion errors bypass the error callback. */
	ctxt->encoding = xmlStrdup(BAD_CAST "UTF-8");
	xmlParseDocument(ctxt);
	bool ok = !L.failed && ctxt->wellFormed && L.root;
	if (!L.failed && !ok)
		fl_error(d, fl_loc_at(L.src, 0, 1), "a flow file must be well-formed XML",
			 "malformed XML: the file has no root element");
	xmlFreeParserCtxt(ctxt);
	if (!ok)
		return -EINVAL;
	out->root = L.root;
	return 0;
}

const struct fl_xattr *fl_xnode_attr(const struct fl_xnode *n, const char *name)
{
	for (size_t i = 0; i < n->nattrs; i++)
		if (strcmp(n->attrs[i].name, name) == 0)
			return &n->attrs[i];
	return NULL;
}

struct fl_loc fl_xnode_text_loc(const struct fl_xnode *n, size_t i, size_t len)
{
	if (i > n->tlen)
		i = n->tlen;
	size_t off = n->tmap[i];
	/* A span that crosses an entity or a line still underlines from its
	 * first byte; clip it at the raw end of its last byte. */
	size_t rawlen = len;
	if (len && i + len <= n->tlen)
		rawlen = n->tmap[i + len - 1] + 1 - off;
	return fl_loc_at(n->loc.src, off, rawlen ? rawlen : 1);
}
