/* Which of fio's own options an mdfio job accepts: every option of fio's
 * table (fio_options[] of the fio that loads the engine), each with a rule
 * and its reason. The table is data only (no fio header), so that a test
 * helper can print it beside the running fio's table. */
#ifndef MDFIO_FIO_OPTIONS_H
#define MDFIO_FIO_OPTIONS_H

enum mdfio_rule {
	MDFIO_ALLOW,		/* any value: it changes nothing mdfio runs or reports */
	MDFIO_ALLOW_IF,		/* only at the value(s) its check accepts */
	MDFIO_REFUSE,		/* never: one line and the job fails */
};

/* The check of an ALLOW_IF option (in options.c, which sees the job). */
enum mdfio_value_check {
	MDFIO_CHECK_NONE,
	MDFIO_CHECK_RW,			/* the phase's direction, no :N */
	MDFIO_CHECK_BS,			/* one size for every direction */
	MDFIO_CHECK_DIRECTORY,		/* one directory, no ':' list */
	MDFIO_CHECK_ONE_LOOP,		/* loops=1 */
	MDFIO_CHECK_ONE_FILE,		/* nrfiles=1 */
	MDFIO_CHECK_BACKEND,		/* direct=1 only where the backend uses O_DIRECT */
	MDFIO_CHECK_INLINE,		/* io_submit_mode=inline */
	MDFIO_CHECK_SERIALIZE,		/* create_serialize=1 */
	MDFIO_CHECK_STATS,		/* stats=1 */
	MDFIO_CHECK_CLAT_PERCENTILES,	/* clat_percentiles=1 */
	MDFIO_CHECK_CLAT,		/* disable_clat=0 */
	MDFIO_CHECK_LOG_AVG,		/* log_avg_msec > 0 */
};

struct mdfio_fio_option {
	const char *name;	/* fio's name (not an alias) */
	const char *profile;	/* the fio profile that adds it; NULL: fio's own */
	enum mdfio_rule rule;
	enum mdfio_value_check check;
	/* ALLOW: why any value is fine; ALLOW_IF: the value expected, and
	 * why; REFUSE: why, and what to use instead */
	const char *reason;
};

/* NULL-terminated, in the order of fio's table */
extern const struct mdfio_fio_option mdfio_fio_options[];

/* The entry of fio's option name of profile (NULL: fio's own); NULL if the
 * table does not know it. */
const struct mdfio_fio_option *mdfio_fio_option_find(const char *name,
						     const char *profile);

#endif
