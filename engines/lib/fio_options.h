/* Which of fio's own options an mdfio job accepts: every option of fio's
 * table (fio_options[]) in every fio release it covers (from 3.33; see
 * fio_options.c), each with a rule and its reason. One table serves every
 * release, because the engine is built against whichever of them loads it.
 * The table is data only (no fio header), so that a test helper can print
 * it beside the running fio's table. */
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
	const char *name;	/* fio's name (not an alias; a renamed option has two entries) */
	const char *profile;	/* the fio profile that adds it; NULL: fio's own */
	/* since: the first fio release whose table has the option under this
	 * name ("3.38"), NULL: 3.33 already; last: the last such release,
	 * NULL: the newest still. Only the test reads them, to tell a stale
	 * entry from an option of another release. */
	const char *since;
	const char *last;
	enum mdfio_rule rule;
	enum mdfio_value_check check;
	/* ALLOW: why any value is fine; ALLOW_IF: the value expected, and
	 * why; REFUSE: why, and what to use instead */
	const char *reason;
};

/* NULL-terminated, in the order of fio's table (the options of every
 * release merged: each release's, in that release's order) */
extern const struct mdfio_fio_option mdfio_fio_options[];

/* The entry of fio's option name of profile (NULL: fio's own); NULL if the
 * table does not know it. */
const struct mdfio_fio_option *mdfio_fio_option_find(const char *name,
						     const char *profile);

#endif
