/* Prints PostMark's sequence of operations (engines/lib/postmark.c) for the
 * parameters given as name=value arguments (postmark.h's fields), one line
 * per operation ("pool create s1/3 5012 7 0": its bytes, seq and after),
 * then its counters: for
 * test_postmark_sequence.py, which holds them against what Debian's
 * postmark does and reports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postmark.h"

static const char *const phase_names[] = { "pool", "transactions", "deletion" };

static int set(struct mdfio_pm_params *p, const char *arg)
{
	static const struct { const char *name; size_t off; int is_int; } fields[] = {
#define F(n, i) { #n, offsetof(struct mdfio_pm_params, n), i }
		F(size_low, 0), F(size_high, 0), F(number, 0), F(transactions, 0),
		F(subdirectories, 0), F(bias_read, 1), F(bias_create, 1),
		F(read_block, 0), F(write_block, 0), F(buffered, 1), F(seed, 0),
#undef F
	};
	const char *eq = strchr(arg, '=');

	for (size_t i = 0; eq && i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (strlen(fields[i].name) != (size_t)(eq - arg) ||
		    strncmp(fields[i].name, arg, (size_t)(eq - arg)))
			continue;
		if (fields[i].is_int)
			*(int *)((char *)p + fields[i].off) = atoi(eq + 1);
		else
			*(uint32_t *)((char *)p + fields[i].off) = (uint32_t)strtoul(eq + 1, NULL, 10);
		return 0;
	}
	fprintf(stderr, "postmark_sequence: %s: expected name=value of a parameter\n", arg);
	return 1;
}

int main(int argc, char **argv)
{
	struct mdfio_pm_params p = MDFIO_PM_DEFAULTS;
	struct mdfio_pm pm;
	struct mdfio_pm_op op;
	const char *why;
	char name[64];

	for (int i = 1; i < argc; i++)
		if (set(&p, argv[i]))
			return 2;
	if ((why = mdfio_pm_check(&p))) {
		fprintf(stderr, "postmark_sequence: %s\n", why);
		return 2;
	}
	if (mdfio_pm_init(&pm, &p, NULL))
		return 1;
	while (mdfio_pm_next(&pm, &op)) {
		mdfio_pm_name(name, sizeof(name), &p, &op);
		printf("%s %s %s %u %llu %llu\n", phase_names[op.phase], mdfio_pm_kind_names[op.kind],
		       name, op.bytes, (unsigned long long)op.seq, (unsigned long long)op.after);
	}
	printf("counts created %u read %u appended %u deleted %u deleted_alone %u out_of_files %d\n",
	       pm.created, pm.read, pm.appended, pm.deleted, pm.deleted_alone, pm.out_of_files);
	printf("bytes read %.9g written %.9g\n", (double)pm.bytes_read, (double)pm.bytes_written);
	mdfio_pm_free(&pm);
	return 0;
}
