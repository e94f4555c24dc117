/*
 * simxen: the toolstack of the simulated Xen host (a simulation for tests,
 * not Xen): creates and destroys domains and reads and writes the
 * simulated xenstore as dom0.  See README.
 */
#include "simx.h"
#include "simx_evtchn.h"
#include "simx_grant.h"
#include "simx_store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *out)
{
	fputs("Usage: simxen DIR COMMAND [ARG...]\n"
	      "The toolstack of xflowtop's simulated Xen host (a simulation, not Xen): acts\n"
	      "as dom0 on the state directory DIR that the simulated libxenstore,\n"
	      "libxenevtchn and libxengnttab (build/sim/xenlibs) share.\n\n"
	      "Commands:\n"
	      "  init                     create DIR with dom0 (any other command does too)\n"
	      "  domain-create ID NAME    create domain ID: /local/domain/ID/{name,domid},\n"
	      "                           /local/domain/ID/data owned by ID; fires\n"
	      "                           @introduceDomain\n"
	      "  domain-destroy ID        destroy domain ID: close its event channels, end its\n"
	      "                           grants, remove /local/domain/ID and the nodes it\n"
	      "                           owns; fires @releaseDomain\n"
	      "  domains                  list the domains: ID NAME\n"
	      "  read PATH                print a node's value\n"
	      "  write PATH VALUE         write a node (fires its watches)\n"
	      "  ls PATH                  list a node's children, one per line\n"
	      "  rm PATH                  remove a node and its children\n"
	      "  perms PATH [PERM...]     print or set a node's permissions (e.g. n0 r7)\n"
	      "  help                     show this help\n\n"
	      "Relative paths are under /local/domain/0.  Exit status: 0 on success, 1 when\n"
	      "the command failed, 2 for bad usage.\n", out);
}

static int parse_id(const char *s, unsigned int *id)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || s[0] == '-' || v >= SIMX_DOMID_LIMIT)
		return -EINVAL;
	*id = (unsigned int)v;
	return 0;
}

/* Writes @abs = @value with permissions @perms (NULL: inherited). */
static int put_node(const struct simx_env *env, const char *abs, const char *value,
		    const char *perms)
{
	struct simx_perms p;
	int rc = simx_store_write_locked(env, abs, value, (unsigned int)strlen(value));

	if (!rc && perms) {
		simx_perms_parse(perms, &p);
		rc = simx_store_set_perms_locked(env, abs, &p);
	}
	return rc;
}

static int domain_create(struct simx_env *env, unsigned int id, const char *name)
{
	char path[64], perms[32], value[24];
	int rc;

	if (id == 0 || strchr(name, '\n'))
		return -EINVAL;
	simx_lock(env, true);
	if (simx_domain_exists(env, id)) {
		rc = -EEXIST;
		goto out;
	}
	snprintf(path, sizeof(path), "domains/%u", id);
	rc = simx_write_file(env->dirfd, path, name, strlen(name));
	/* As libxl lays a domain out: dom0's home for it, readable by it. */
	snprintf(path, sizeof(path), "/local/domain/%u", id);
	snprintf(perms, sizeof(perms), "n0 r%u", id);
	if (!rc)
		rc = put_node(env, path, "", perms);
	snprintf(path, sizeof(path), "/local/domain/%u/name", id);
	if (!rc)
		rc = put_node(env, path, name, NULL);
	snprintf(path, sizeof(path), "/local/domain/%u/domid", id);
	snprintf(value, sizeof(value), "%u", id);
	if (!rc)
		rc = put_node(env, path, value, NULL);
	snprintf(path, sizeof(path), "/local/domain/%u/data", id);
	snprintf(perms, sizeof(perms), "n%u", id);
	if (!rc)
		rc = put_node(env, path, "", perms);
	if (!rc)
		simx_store_fire_special_locked(env, "@introduceDomain");
out:
	simx_unlock(env);
	return rc;
}

static int domain_destroy(struct simx_env *env, unsigned int id)
{
	struct simx_evtchn_cache cache = { 0 };
	char path[32];
	int rc = 0;

	if (id == 0)
		return -EINVAL;
	simx_lock(env, true);
	if (!simx_domain_exists(env, id)) {
		rc = -ESRCH;
		goto out;
	}
	snprintf(path, sizeof(path), "domains/%u", id);
	unlinkat(env->dirfd, path, 0);
	simx_evtchn_close_domain_locked(env, &cache, id);
	simx_grant_end_domain_locked(env, id);
	simx_store_forget_domain_locked(env, id);
	simx_store_fire_special_locked(env, "@releaseDomain");
out:
	simx_unlock(env);
	simx_evtchn_cache_fini(&cache);
	return rc;
}

static int list_domains(struct simx_env *env)
{
	simx_lock(env, false);
	for (unsigned int id = 0; id < SIMX_DOMID_LIMIT; id++) {
		char path[32], *name;

		if (!simx_domain_exists(env, id))
			continue;
		snprintf(path, sizeof(path), "domains/%u", id);
		if (simx_read_file(env->dirfd, path, 256, &name, NULL))
			continue;
		name[strcspn(name, "\n")] = '\0';
		printf("%u %s\n", id, name);
		free(name);
	}
	simx_unlock(env);
	return 0;
}

static int store_command(struct simx_env *env, const char *cmd, int argc, char **argv)
{
	char abs[SIMX_PATH_SIZE], **names, *value, text[SIMX_PERMS_MAX * 8 + 8];
	struct simx_perms perms;
	unsigned int num, len;
	int rc = simx_store_canon(0, argv[0], false, abs, NULL);

	if (rc)
		return rc;
	simx_lock(env, strcmp(cmd, "read") && strcmp(cmd, "ls") && !(!strcmp(cmd, "perms") && argc == 1));
	if (!strcmp(cmd, "read")) {
		rc = simx_store_read_locked(env, abs, &value, &len);
		if (!rc) {
			fwrite(value, 1, len, stdout);
			putchar('\n');
			free(value);
		}
	} else if (!strcmp(cmd, "write")) {
		rc = simx_store_write_locked(env, abs, argv[1], (unsigned int)strlen(argv[1]));
	} else if (!strcmp(cmd, "ls")) {
		rc = simx_store_directory_locked(env, abs, &names, &num);
		for (unsigned int i = 0; !rc && i < num; i++)
			puts(names[i]);
		if (!rc)
			free(names);
	} else if (!strcmp(cmd, "rm")) {
		rc = simx_store_rm_locked(env, abs);
	} else if (argc == 1) {
		rc = simx_store_get_perms_locked(env, abs, &perms);
		if (!rc)
			rc = simx_perms_format(&perms, text, sizeof(text));
		if (!rc)
			puts(text);
	} else {
		size_t used = 0;

		text[0] = '\0';
		for (int i = 1; i < argc && used < sizeof(text); i++)
			used += (size_t)snprintf(text + used, sizeof(text) - used, "%s ", argv[i]);
		rc = used < sizeof(text) ? simx_perms_parse(text, &perms) : -E2BIG;
		if (!rc)
			rc = simx_store_set_perms_locked(env, abs, &perms);
	}
	simx_unlock(env);
	return rc;
}

int main(int argc, char **argv)
{
	struct simx_env env;
	const char *cmd;
	unsigned int id = 0;
	int rc, nargs;

	if (argc >= 2 && (!strcmp(argv[1], "help") || !strcmp(argv[1], "-h") ||
			  !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc < 3) {
		usage(stderr);
		return 2;
	}
	cmd = argv[2];
	nargs = argc - 3;
	if (!strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!((!strcmp(cmd, "init") && nargs == 0) || (!strcmp(cmd, "domains") && nargs == 0) ||
	      (!strcmp(cmd, "domain-create") && nargs == 2) ||
	      (!strcmp(cmd, "domain-destroy") && nargs == 1) ||
	      ((!strcmp(cmd, "read") || !strcmp(cmd, "ls") || !strcmp(cmd, "rm")) && nargs == 1) ||
	      (!strcmp(cmd, "write") && nargs == 2) || (!strcmp(cmd, "perms") && nargs >= 1))) {
		fprintf(stderr, "simxen: bad command or arguments: %s\n", cmd);
		usage(stderr);
		return 2;
	}
	if ((!strcmp(cmd, "domain-create") || !strcmp(cmd, "domain-destroy")) &&
	    parse_id(argv[3], &id)) {
		fprintf(stderr, "simxen: %s is not a domain id (1..32751)\n", argv[3]);
		return 2;
	}
	rc = simx_env_open_dir(&env, argv[1], 0);
	if (rc) {
		fprintf(stderr, "simxen: %s: %s\n", argv[1], strerror(-rc));
		return 1;
	}
	if (!strcmp(cmd, "init"))
		rc = 0;
	else if (!strcmp(cmd, "domains"))
		rc = list_domains(&env);
	else if (!strcmp(cmd, "domain-create"))
		rc = domain_create(&env, id, argv[4]);
	else if (!strcmp(cmd, "domain-destroy"))
		rc = domain_destroy(&env, id);
	else
		rc = store_command(&env, cmd, nargs, argv + 3);
	simx_env_close(&env);
	if (rc) {
		fprintf(stderr, "simxen: %s%s%s: %s\n", cmd, nargs ? " " : "", nargs ? argv[3] : "",
			strerror(-rc));
		return 1;
	}
	return 0;
}
