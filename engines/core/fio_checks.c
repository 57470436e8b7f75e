/* The checks of fio's own options a job was given against what mdfio
 * accepts (the table of lib/fio_options.c) and what its phase needs, and of
 * the engine options that contradict them: when fio parses phase=, in
 * fio's main process for every mdfio job of the run, and at job start. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fio_options.h"
#include "fio_compat.h"
#include "job.h"

/* fio marks each of its options a job was given, in the job's section, in
 * [global] or on the command line: one bit per entry of fio_options[] in
 * td->o.set_options (what fio_option_is_set() reads). What the engine sets
 * itself (numjobs, bs, directory, rw, continue_on_error, disable_*) is not
 * marked. */
static int given(const struct thread_options *o, unsigned int i)
{
	const unsigned int bits = 8 * sizeof(o->set_options[0]);

	return (o->set_options[i / bits] >> (i % bits)) & 1;
}

/* The line of a refusal, without "mdfio: ". Returns 1. */
static int why(char *msg, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int why(char *msg, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
	return 1;
}

/* bs: the object size, one for every direction; a range or list leaves
 * the directions (or min and max, once fio has set them) apart */
static int one_size(const struct thread_options *o)
{
	int d;

	for (d = 0; d < DDIR_RWDIR_CNT; d++)
		if (o->bs[d] != o->bs[0] ||
		    (o->min_bs[d] && o->min_bs[d] != o->bs[0]) ||
		    (o->max_bs[d] && o->max_bs[d] != o->bs[0]))
			return 0;
	return 1;
}

/* Whether the value of an ALLOW_IF option is one the engine was checked
 * with (the table's reason says which). direct: whether the backend opens
 * objects with O_DIRECT (-1: not known yet). */
static int value_ok(const struct thread_options *o, enum mdfio_value_check c,
		    int direct)
{
	switch (c) {
	case MDFIO_CHECK_BS:
		return one_size(o);
	case MDFIO_CHECK_DIRECTORY:
		return !o->directory || !strchr(o->directory, ':');
	case MDFIO_CHECK_ONE_LOOP:
		return o->loops == 1;
	case MDFIO_CHECK_ONE_FILE:
		return o->nr_files == 1;
	case MDFIO_CHECK_INLINE:
		return o->io_submit_mode == IO_MODE_INLINE;
	case MDFIO_CHECK_SERIALIZE:
		return o->create_serialize != 0;
	case MDFIO_CHECK_STATS:
		return o->stats != 0;
	case MDFIO_CHECK_CLAT_PERCENTILES:
		return o->clat_percentiles != 0;
	case MDFIO_CHECK_CLAT:
		return !o->disable_clat;
	case MDFIO_CHECK_LOG_AVG:
		return o->log_avg_msec > 0;
	case MDFIO_CHECK_BACKEND:
		return !o->odirect || direct;
	case MDFIO_CHECK_RW:		/* check_rw: it needs the phase */
	case MDFIO_CHECK_NONE:
		return 1;
	}
	return 0;
}

static int check_rw(const struct thread_options *o, enum mdfio_phase ph,
		    char *msg, size_t len)
{
	const struct mdfio_phase_desc *p = &mdfio_phases[ph];

	if (o->td_ddir != p->rw)
		return why(msg, len, "rw: phase=%s reports its count as rw=%s; remove the rw= option",
			   mdfio_phase_name(ph), p->rw_name);
	if (o->ddir_seq_nr != 1 || o->ddir_seq_add)
		return why(msg, len, "rw: a :N suffix makes fio skip units; remove it (phase=%s runs as rw=%s)",
			   mdfio_phase_name(ph), p->rw_name);
	return 0;
}

/* What the job is checked against: its phase, and whether its backend
 * opens objects with O_DIRECT (-1: not known yet, when fio parses the
 * job). */
struct mdfio_check {
	enum mdfio_phase ph;
	int direct;
	const char *engine;
	char msg[1024];
};

/* Option fo, given: 1 and the refusal in c->msg if the engine does not
 * accept it. pass 0 looks only for options refused whatever their value
 * (and unknown ones), pass 1 at the values of the rest, so that bsrange is
 * named as such, not as the bs it makes a range. */
static int check_given(const struct thread_options *o, const struct fio_option *fo,
		       int pass, struct mdfio_check *c)
{
	const struct mdfio_fio_option *e = mdfio_fio_option_find(fo->name, fo->prof_name);

	if (!e)
		return !pass && why(c->msg, sizeof(c->msg), "%s: not checked with mdfio (this fio is newer than the engine's table of its options); remove it",
				    fo->name);
	if (e->rule == MDFIO_REFUSE)
		return !pass && why(c->msg, sizeof(c->msg), "%s must not be set: %s", e->name, e->reason);
	if (e->rule != MDFIO_ALLOW_IF || !pass)
		return 0;
	if (e->check == MDFIO_CHECK_RW)
		return check_rw(o, c->ph, c->msg, sizeof(c->msg));
	if (value_ok(o, e->check, c->direct))
		return 0;
	if (e->check == MDFIO_CHECK_BACKEND)	/* buffered=0 is direct=1 */
		return why(c->msg, sizeof(c->msg), "direct=1: %s does not open objects with O_DIRECT; use mdfio-aio",
			   c->engine);
	return why(c->msg, sizeof(c->msg), "%s: expected %s", e->name, e->reason);
}

/* 1 and the refusal in c->msg if a fio option o was given is refused;
 * final: the options are complete (job start), so the engine's needs are
 * checked too. */
static int refused(const struct thread_options *o, int final, struct mdfio_check *c)
{
	unsigned int i;
	int pass;

	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < FIO_MAX_OPTS && fio_options[i].name; i++)
			if (given(o, i) && check_given(o, &fio_options[i], pass, c))
				return 1;
	if (!final)
		return 0;
	/* root= sets directory without fio marking it */
	if (!o->directory || !*o->directory)
		return why(c->msg, sizeof(c->msg), "directory= (or root=) is required: the namespace root");
	if (strchr(o->directory, ':'))
		return why(c->msg, sizeof(c->msg), "directory=%s: one directory only (no ':' list)",
			   o->directory);
	return 0;
}

int mdfio_check_given_options(const struct thread_data *td, enum mdfio_phase ph)
{
	struct mdfio_check c = { .ph = ph, .direct = -1, .engine = td->io_ops->name };

	return refused(&td->o, 0, &c) ? mdfio_error("%s", c.msg) : 0;
}

int mdfio_check_fio_options(const struct thread_data *td, enum mdfio_phase ph,
			    int direct)
{
	struct mdfio_check c = { .ph = ph, .direct = direct, .engine = td->io_ops->name };

	if (!refused(&td->o, 1, &c))
		return 0;
	/* one line for the job, not one per clone (they check together) */
	if (!td->subjob_number)
		mdfio_error("%s", c.msg);
	return 1;
}

/* An mdfio job of this fio's run: its phase (0 if unset), or -1 for a job
 * of another engine. Every mdfio engine's options begin with struct
 * mdfio_options. */
static int mdfio_job_phase(const struct thread_data *t)
{
	if (!t->io_ops || strncmp(t->io_ops->name, "mdfio-", 6) || !t->eo)
		return -1;
	return (int)((const struct mdfio_options *)t->eo)->phase;
}

/* Engine options that contradict each other or t's other options (one
 * line in msg). */
/* A control character in a name fio writes into its JSON output (fio 3.33
 * and 3.41 write it unescaped): the run would complete, and its output not
 * be JSON. */
static int has_control(const char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

static int control_refused(const struct thread_data *t, char *msg, size_t len)
{
	const struct mdfio_options *eo = t->eo;
	const struct { const char *name, *value; } named[] = {
		{ "directory", t->o.directory }, { "description", t->o.description },
		{ "the job's name", t->o.name }, { "latency_log", eo->latency_log },
		{ "hosts", eo->hosts }, { "run_info_file", eo->run_info_file },
		{ "run_id", eo->run_id },
	};
	size_t i;

	for (i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		if (has_control(named[i].value))
			return why(msg, len, "%s%s%s: holds a control character, which fio writes unescaped into its JSON output (it would not be JSON); use a name without one",
				   named[i].name, i == 2 ? " " : "=", named[i].value);
	return 0;
}

static int engine_option_refused(const struct thread_data *t, char *msg, size_t len)
{
	const struct mdfio_options *eo = t->eo;
	int steps = mdfio_phases[eo->phase - 1].per_set_is_steps;
	uint64_t per_set = steps ? eo->steps : eo->precreate, units, bytes;

	/* fio counts a job's bytes (size=, io_size) in 64 bits: beyond, a
	 * phase would run as some other size, or fio would ask for a size=
	 * nobody set */
	if (__builtin_mul_overflow(per_set, (uint64_t)eo->datasets, &units) ||
	    __builtin_mul_overflow(units, (uint64_t)t->o.bs[DDIR_WRITE], &bytes))
		return why(msg, len, "datasets=%u times %s=%" PRIu64 " objects of bs=%llu bytes is more than fio counts in a job's 64-bit size; use fewer or smaller objects",
			   eo->datasets, steps ? "steps_per_set" : "precreate_per_set", per_set,
			   (unsigned long long)t->o.bs[DDIR_WRITE]);

	if (control_refused(t, msg, len))
		return 1;
	if (eo->stonewall_wear_out && !eo->stonewall_timer)
		return why(msg, len, "stonewall_wear_out=1 needs stonewall_timer=<seconds> > 0: the wear-out starts when the timer stops the ranks (md-workbench -W with -w)");
	/* md-workbench waits after each operation of its one process; with
	 * units in flight a wait would hold up the others' completions, whose
	 * times would then include it and lengthen their own waits in turn */
	if (eo->waiting_factor > 1e-9 && t->o.iodepth > 1 && !(t->io_ops->flags & FIO_SYNCIO))
		return why(msg, len, "waiting_factor=%g needs iodepth=1 (md-workbench -t waits after each operation of one process; with units in flight a wait would be counted in the times of the others)",
			   eo->waiting_factor);
	return 0;
}

/* What mdfio_check_run found, kept for the jobs that ask after the first:
 * every job's setup asks, and checking every job each time made fio's
 * set-up of a long jobfile quadratic in its sections (times the options
 * checked). Taken again if fio's table of jobs has grown since. */
static struct {
	unsigned int jobs;	/* thread_number when checked; 0: not yet */
	int bad;
	char **line;		/* per job: its refusal, or NULL */
} run_check;

static void forget_run_check(void)
{
	unsigned int i;

	for (i = 0; i < run_check.jobs; i++)
		free(run_check.line[i]);
	free(run_check.line);
	run_check.line = NULL;
	run_check.jobs = 0;
	run_check.bad = 0;
}

int mdfio_check_run(const struct thread_data *td, int direct)
{
	struct thread_data *t;
	int i, bad = 0;

	/* the job refused says so, once; every other one fails quietly, so
	 * that no job of the run touches the namespace */
	if (run_check.jobs && run_check.jobs == thread_number) {
		if (run_check.line[td->thread_number - 1])
			mdfio_error("%s", run_check.line[td->thread_number - 1]);
		return run_check.bad;
	}
	forget_run_check();
	run_check.line = calloc(thread_number ? thread_number : 1, sizeof(*run_check.line));
	mdfio_for_each_td(t, i) {
		/* another engine's backend is checked by that engine */
		struct mdfio_check c = { .direct = t->io_ops == td->io_ops ? direct : -1 };
		int ph = mdfio_job_phase(t);

		if (ph < 0 || t->subjob_number)
			continue;
		c.engine = t->io_ops->name;
		if (!ph) {
			why(c.msg, sizeof(c.msg), "phase= is required: precreate, benchmark or cleanup");
		} else if (engine_option_refused(t, c.msg, sizeof(c.msg))) {
			/* refused below */
		} else {
			c.ph = (enum mdfio_phase)(ph - 1);
			if (!refused(&t->o, 1, &c))
				continue;
		}
		if (t == td)
			mdfio_error("%s", c.msg);
		if (run_check.line)
			run_check.line[i] = strdup(c.msg);
		bad = 1;
	}
	if (run_check.line) {
		run_check.jobs = thread_number;
		run_check.bad = bad;
	}
	return bad;
}
