/* fio's option table for tests/engines/test_fio_options.py, two ways:
 *
 * - loaded by fio as an engine (ioengine=external:...), it prints the
 *   version and option table of that fio and mdfio's table of the options
 *   of every fio release it covers (engines/lib/fio_options.c), one
 *   tab-separated row each, and ends fio. The engines hide their symbols,
 *   so the table is linked in here rather than read from one of them;
 * - preloaded into fio with MDFIO_TEST_NEWER_FIO set, it adds an option
 *   to fio's table before fio starts (as a newer fio would have one), which
 *   does nothing when given. */
#include <stdio.h>
#include <stdlib.h>

#include "fio.h"
#include "optgroup.h"
#include "parse.h"

#include "fio_options.h"

void get_ioengine(struct ioengine_ops **ops);

#define NEWER_OPTION "mdfio_test_newer_option"

static int newer_option_cb(void *data, int *val)
{
	(void)data;
	(void)val;
	return 0;
}

/* before fio's own constructors (a preloaded library's run first), so
 * the option lands right after fio's own, as a newer fio's would */
__attribute__((constructor)) static void add_newer_option(void)
{
	static const struct fio_option o = {
		.name = NEWER_OPTION,
		.lname = NEWER_OPTION,
		.type = FIO_OPT_STR_SET,
		.cb = newer_option_cb,
		.help = "An option of a fio newer than mdfio's table (a test's)",
		.category = FIO_OPT_C_GENERAL,
		.group = FIO_OPT_G_INVALID,
	};

	if (getenv("MDFIO_TEST_NEWER_FIO") && add_option(&o))
		fprintf(stderr, "fio_option_table: cannot add %s\n", NEWER_OPTION);
}

/* how fio treats an option whatever its value: only these matter here */
static const char *usable(enum fio_opt_type t)
{
	switch (t) {
	case FIO_OPT_DEPRECATED:
		return "deprecated";		/* fio refuses it */
	case FIO_OPT_SOFT_DEPRECATED:
		return "soft_deprecated";	/* fio ignores it */
	case FIO_OPT_UNSUPPORTED:
		return "unsupported";		/* not built into this fio */
	case FIO_OPT_INVALID:
		return "invalid";
	default:
		return "usable";
	}
}

static const char *rule_name(enum mdfio_rule r)
{
	switch (r) {
	case MDFIO_ALLOW:
		return "ALLOW";
	case MDFIO_ALLOW_IF:
		return "ALLOW_IF";
	case MDFIO_REFUSE:
		return "REFUSE";
	}
	return "?";
}

void get_ioengine(struct ioengine_ops **ops)
{
	const struct mdfio_fio_option *e;
	const struct fio_option *o;

	*ops = NULL;
	/* which of the table's releases this fio is */
	printf("version\t%s\n", fio_version_string);
	/* fio<TAB>name<TAB>alias<TAB>profile<TAB>usable ("-": none) */
	for (o = fio_options; o->name; o++)
		printf("fio\t%s\t%s\t%s\t%s\n", o->name, o->alias ? o->alias : "-",
		       o->prof_name ? o->prof_name : "-", usable(o->type));
	/* mdfio<TAB>name<TAB>profile<TAB>since<TAB>last<TAB>rule<TAB>reason */
	for (e = mdfio_fio_options; e->name; e++)
		printf("mdfio\t%s\t%s\t%s\t%s\t%s\t%s\n", e->name, e->profile ? e->profile : "-",
		       e->since ? e->since : "-", e->last ? e->last : "-", rule_name(e->rule),
		       e->reason);
	fflush(stdout);
	exit(0);
}
