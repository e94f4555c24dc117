/*
 * Site and domain names.  See tui/sites.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/sites.h"

static uint32_t pow2_at_least(uint64_t n)
{
	uint32_t p = 16;
	while (p < n && p < (1u << 30))
		p <<= 1;
	return p;
}

int xft_sites_init(struct xft_sites *s, uint32_t max_sites, xft_site_lookup_fn lookup, void *ctx)
{
	memset(s, 0, sizeof(*s));
	if (max_sites < 1)
		max_sites = 1;
	s->lookup = lookup;
	s->ctx = ctx;
	s->max = max_sites;
	s->mask = pow2_at_least((uint64_t)max_sites * 2) - 1;
	s->group_mask = s->mask;
	s->tab = calloc((size_t)s->mask + 1, sizeof(*s->tab));
	s->group_slots = calloc((size_t)s->group_mask + 1, sizeof(*s->group_slots));
	s->groups = calloc((size_t)max_sites + 1, sizeof(*s->groups));
	if (!s->tab || !s->group_slots || !s->groups) {
		xft_sites_fini(s);
		return -ENOMEM;
	}
	s->other.file = "?";
	s->other.function = "(other)";
	s->other.what = "";
	s->other.group = UINT32_MAX;
	s->other.used = 1;
	return 0;
}

void xft_sites_fini(struct xft_sites *s)
{
	if (s->tab)
		for (uint32_t i = 0; i <= s->mask; i++)
			if (s->tab[i].used) {
				free((char *)s->tab[i].file);
				free((char *)s->tab[i].what);
			}
	if (s->groups)
		for (uint32_t i = 0; i < s->ngroups; i++)
			free(s->groups[i]);
	free(s->tab);
	free(s->group_slots);
	free(s->groups);
	memset(s, 0, sizeof(*s));
}

static uint32_t hash_str(const char *p)
{
	uint32_t h = 2166136261u;
	for (; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	return h;
}

static uint32_t intern_group(struct xft_sites *s, const char *fn)
{
	uint32_t i = hash_str(fn) & s->group_mask;
	while (s->group_slots[i]) {
		uint32_t g = s->group_slots[i] - 1;
		if (!strcmp(s->groups[g], fn))
			return g;
		i = (i + 1) & s->group_mask;
	}
	/* ngroups <= n <= max, so there is always room. */
	char *copy = strdup(fn);
	if (!copy)
		return UINT32_MAX;
	s->groups[s->ngroups] = copy;
	s->group_slots[i] = ++s->ngroups;
	return s->ngroups - 1;
}

static uint32_t hash_site(uint16_t domain, uint32_t site)
{
	uint64_t k = (uint64_t)domain << 32 | site;
	k *= UINT64_C(0x9E3779B97F4A7C15);
	return (uint32_t)(k >> 32);
}

const struct xft_site *xft_sites_get(struct xft_sites *s, uint16_t domain, uint32_t site)
{
	uint32_t i = hash_site(domain, site) & s->mask;
	while (s->tab[i].used) {
		if (s->tab[i].domain == domain && s->tab[i].site == site)
			return &s->tab[i];
		i = (i + 1) & s->mask;
	}
	if (s->n >= s->max) {
		s->overflow++;
		return &s->other;
	}
	struct xflow_site_info info;
	memset(&info, 0, sizeof(info));
	char fn[64];
	int known = s->lookup && s->lookup(s->ctx, domain, site, &info) == 0 && info.function;
	if (!known) {
		snprintf(fn, sizeof(fn), "site#%u", site);
		info.function = fn;
		info.file = "?";
		info.line = 0;
		info.what = NULL;
		info.domain = NULL;
	}
	struct xft_site *e = &s->tab[i];
	uint32_t g = intern_group(s, info.function);
	char *file = strdup(info.file ? info.file : "?");
	char *what = strdup(info.what ? info.what : "");
	if (g == UINT32_MAX || !file || !what) {
		free(file);
		free(what);
		s->overflow++;
		return &s->other;
	}
	e->used = 1;
	e->domain = domain;
	e->site = site;
	e->group = g;
	e->function = s->groups[g];
	e->file = file;
	e->what = what;
	e->line = info.line;
	e->roles = known && (info.roles & XFLOW_SITE_ROLES_KNOWN) ? info.roles & XFLOW_SITE_ROLES_ALL : 0;
	s->n++;
	if (info.domain && *info.domain) {
		int have = 0;
		for (unsigned k = 0; k < s->ndomains; k++)
			if (s->domains[k].id == domain)
				have = 1;
		if (!have)
			xft_sites_set_domain(s, domain, info.domain);
	}
	return e;
}

uint32_t xft_sites_group(void *opaque, uint16_t domain, uint32_t site)
{
	return xft_sites_get(opaque, domain, site)->group;
}

unsigned xft_sites_roles(void *opaque, uint16_t domain, uint32_t site)
{
	return xft_sites_get(opaque, domain, site)->roles;
}

const char *xft_sites_group_name(const struct xft_sites *s, uint32_t group)
{
	return group < s->ngroups ? s->groups[group] : "(other)";
}

void xft_sites_set_domain(struct xft_sites *s, uint16_t id, const char *name)
{
	struct xft_domain_name *d = NULL;
	for (unsigned k = 0; k < s->ndomains; k++)
		if (s->domains[k].id == id)
			d = &s->domains[k];
	if (!d) {
		if (s->ndomains >= XFT_MAX_DOMAIN_NAMES)
			return;
		d = &s->domains[s->ndomains++];
		d->id = id;
	}
	snprintf(d->name, sizeof(d->name), "%s", name);
}

const char *xft_sites_domain(struct xft_sites *s, uint16_t id)
{
	for (unsigned k = 0; k < s->ndomains; k++)
		if (s->domains[k].id == id)
			return s->domains[k].name;
	char buf[16];
	snprintf(buf, sizeof(buf), "dom%u", id);
	xft_sites_set_domain(s, id, buf);
	for (unsigned k = 0; k < s->ndomains; k++)
		if (s->domains[k].id == id)
			return s->domains[k].name;
	return "dom?";
}
