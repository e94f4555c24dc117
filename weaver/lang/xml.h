/*
 * weaver/lang/xml.h — a flow file as a plain element tree with exact locations.
 *
 * xml_load.c is the only file that includes libxml2; it checks
 * well-formedness and hands back this tree, in which every element and
 * attribute knows its byte offset in the file and every element's text is
 * decoded (&lt; → <) with a map from each decoded byte back to the raw byte
 * it came from, so later passes can point a caret into the file itself.
 */
#ifndef XFLOW_WEAVER_LANG_XML_H
#define XFLOW_WEAVER_LANG_XML_H

#include <stddef.h>
#include <stdint.h>

#include "weaver/lang/diag.h"

/* Elements nested deeper than this are refused (no unbounded recursion in
 * any later pass). */
#define FL_XML_MAX_DEPTH 32
/* An element with more attributes than this is refused before libxml2
 * parses it: libxml2 (2.9) looks for a duplicate among the attributes
 * before each one, so one element with 100,000 took it seconds.  Flow
 * elements take at most three. */
#define FL_XML_MAX_ATTRS 64

struct fl_xattr {
	const char *name;
	const char *value;      /* decoded */
	struct fl_loc loc;      /* the attribute name */
	struct fl_loc vloc;     /* the first byte of the value */
};

struct fl_xnode {
	const char *name;
	struct fl_loc loc;      /* the '<' of the start tag, spanning the name */
	struct fl_xattr *attrs;
	size_t nattrs, attrs_cap;
	struct fl_xnode **kids;
	size_t nkids, kids_cap;
	struct fl_xnode *parent;
	/* Direct text content (child elements, comments and processing
	 * instructions left out, CDATA kept), decoded; tmap[i] is the raw
	 * offset of text[i], tmap[tlen] the offset just past the content. */
	const char *text;
	size_t tlen;
	const uint32_t *tmap;
	uint32_t content_off;   /* raw offset just after the start tag */
	uint32_t end_off;       /* raw offset just after the element */
	struct fl_loc end_loc;  /* the end tag, or the start tag if self-closing */
	int depth;
};

struct fl_xdoc {
	const struct fl_src *src;
	struct fl_xnode *root;
};

/*
 * Parse @len bytes of @buf, named @path in messages.  Returns 0, or -EINVAL
 * after reporting why the file is not well-formed XML to @d.
 */
int fl_xml_load(struct fl_arena *arena, struct fl_diag *d, const char *path,
		const char *buf, size_t len, struct fl_xdoc *out);

/* The attribute @name of @n, or NULL. */
const struct fl_xattr *fl_xnode_attr(const struct fl_xnode *n, const char *name);
/* Location of byte @i of @n's decoded text. */
struct fl_loc fl_xnode_text_loc(const struct fl_xnode *n, size_t i, size_t len);

#endif
