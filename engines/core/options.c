/* The engine options every mdfio engine has, and the checks of fio's own
 * options against what a phase needs. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fio_options.h"
#include "fio_compat.h"
#include "job.h"
#include "robust.h"

#define MDFIO_REPEATS_MAX 1000000
/* a day: a host that has not started a rank by then will not */
#define MDFIO_JOIN_TIMEOUT_MAX 86400

/* per thread: clones run as threads with thread=1; room for two paths and
 * the reason after them, which a long path must not push out of the line */
static __thread char last_error[2 * PATH_MAX + 1024];

/* The lines this fio has printed, shared by the processes it forks for its
 * jobs: a refusal every clone of a job meets alike (a symlinked status
 * file) is printed once, not once per clone. Only within one job section
 * (scope): each repeat reports its own errors. */
struct said {
	pthread_mutex_t lock;	/* robust: a job killed holding it blocks nobody */
	unsigned int n;
	int scope[32];
	char line[32][256];
};
static struct said *said;
static __thread int scope;

void mdfio_error_scope(int job)
{
	scope = job;
}

void mdfio_share_errors(void)
{
	void *p;

	if (said)
		return;
	p = mmap(NULL, sizeof(*said), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	if (mdfio_robust_init(&((struct said *)p)->lock))
		munmap(p, sizeof(*said));
	else
		said = p;
}

/* Whether this fio has printed line already; if not, remembers it. */
static int said_before(const char *line)
{
	unsigned int k;
	int found = 0;

	if (!said || strlen(line) >= sizeof(said->line[0]))
		return 0;
	mdfio_robust_lock(&said->lock, 1);
	for (k = 0; k < said->n && !found; k++)
		found = said->scope[k] == scope && !strcmp(said->line[k], line);
	if (!found && said->n < sizeof(said->line) / sizeof(said->line[0])) {
		said->scope[said->n] = scope;
		snprintf(said->line[said->n++], sizeof(said->line[0]), "%s", line);
	}
	mdfio_robust_unlock(&said->lock);
	return found;
}

/* One line on fio's error stream. A fio server sends it to its client, as
 * fio's own messages. Otherwise it goes to stderr alone, in one write:
 * fio's log_err also copies it into the --output file, from the job's
 * process, whose stdio buffer can land a long line across fio's JSON. */
static void say(const char *raw)
{
	/* a name holding a newline or another control character (a path,
	 * a host) stays on the line, escaped: one line per message */
	char line[4 * sizeof(last_error)], out[sizeof(line) + 8];
	size_t k = 0;
	int n;

	for (; *raw && k + 5 < sizeof(line); raw++) {
		unsigned char c = (unsigned char)*raw;

		if (c == '\n' || c == '\t' || c == '\r')
			k += (size_t)snprintf(line + k, sizeof(line) - k, "\\%c",
					      c == '\n' ? 'n' : c == '\t' ? 't' : 'r');
		else if (c < 0x20 || c == 0x7f)
			k += (size_t)snprintf(line + k, sizeof(line) - k, "\\x%02x", c);
		else
			line[k++] = (char)c;
	}
	line[k] = '\0';
	if (is_backend) {
		log_err("mdfio: %s\n", line);
		return;
	}
	n = snprintf(out, sizeof(out), "mdfio: %s\n", line);
	if (n > 0 && write(STDERR_FILENO, out, (size_t)n < sizeof(out) ? (size_t)n : sizeof(out) - 1) < 0)
		return;	/* nowhere left to say it */
}

int mdfio_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	if (!said_before(last_error))
		say(last_error);
	return 1;
}

int mdfio_error_said(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return 1;
}

void mdfio_notice(const char *fmt, ...)
{
	char line[sizeof(last_error)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	say(line);
}

const char *mdfio_last_error(void)
{
	return last_error;
}

/* "value|default": a jobfile writes datasets=${MDW_D}|10 because fio turns an
 * unset variable into "" and rejects empty values. A value longer than buf
 * becomes "", which every parser refuses, naming the whole option: cut
 * short, 000...05 would have been taken for 0. */
static const char *pick(const char *s, char *buf, size_t len)
{
	const char *bar = strchr(s, '|');

	if (!bar)
		return s;
	if (bar != s) {
		size_t n = (size_t)(bar - s);

		if (n >= len)
			n = 0;
		memcpy(buf, s, n);
		buf[n] = '\0';
		return buf;
	}
	return bar + 1;
}

int mdfio_option_value(const char *name, const char *s, char *out, size_t len)
{
	const char *bar = strchr(s, '|');
	const char *v = bar == s ? bar + 1 : s;
	size_t n = bar && bar != s ? (size_t)(bar - s) : strlen(v);

	if (n >= len)
		return mdfio_error("%s: longer than the %zu characters it can hold", name, len - 1);
	memcpy(out, v, n);
	out[n] = '\0';
	return 0;
}

int mdfio_parse_u64(const char *name, const char *s, uint64_t min,
		    uint64_t max, uint64_t *out)
{
	char buf[256], *end;
	const char *v = pick(s, buf, sizeof(buf));
	unsigned long long x;

	errno = 0;
	x = strtoull(v, &end, 10);
	if (!*v || *v == '-' || *end || errno || x < min || x > max)
		return mdfio_error("%s=%s: expected an integer from %" PRIu64
				 " to %" PRIu64, name, s, min, max);
	*out = x;
	return 0;
}

static struct mdfio_options *opts_of(void *data)
{
	return data;
}

#define U64_OPT(fn, name, field, lo, hi)				\
static int fn(void *data, const char *s)				\
{									\
	uint64_t v;							\
	if (mdfio_parse_u64(name, s, lo, hi, &v))			\
		return 1;						\
	opts_of(data)->field = v;					\
	return 0;							\
}

MDFIO_U32_OPT(cb_datasets, "datasets", struct mdfio_options, datasets, 1, UINT32_MAX)
MDFIO_U32_OPT(cb_rank_offset, "rank_offset", struct mdfio_options, rank_offset, 0, UINT32_MAX)
MDFIO_U32_OPT(cb_read_only, "read_only", struct mdfio_options, read_only, 0, 1)
MDFIO_U32_OPT(cb_verify_read, "verify_read", struct mdfio_options, verify_read, 0, 1)
MDFIO_U32_OPT(cb_latency_all, "latency_all", struct mdfio_options, latency_all, 0, 1)
MDFIO_U32_OPT(cb_adaptive_waiting, "adaptive_waiting", struct mdfio_options, adaptive_waiting, 0, 1)
MDFIO_U32_OPT(cb_verbose, "verbose", struct mdfio_options, verbose, 0, 2)
MDFIO_U32_OPT(cb_ignore_precreate_errors, "ignore_precreate_errors", struct mdfio_options,
	      ignore_precreate_errors, 0, 1)
MDFIO_U32_OPT(cb_repeats, "repeats", struct mdfio_options, repeats, 1, MDFIO_REPEATS_MAX)
/* fio's own integer options print "min value out of range" for -1 and run
 * on with the default, and take 1.5 for 1 (3.33 and 3.41): the engine
 * parses every number itself */
MDFIO_U32_OPT(cb_repeat, "repeat", struct mdfio_options, repeat, 1, MDFIO_REPEATS_MAX)
MDFIO_U32_OPT(cb_join_timeout, "join_timeout", struct mdfio_options, join_timeout, 1,
	      MDFIO_JOIN_TIMEOUT_MAX)
MDFIO_U32_OPT(cb_stonewall_timer, "stonewall_timer", struct mdfio_options, stonewall_timer, 0, UINT32_MAX)
MDFIO_U32_OPT(cb_stonewall_wear_out, "stonewall_wear_out", struct mdfio_options, stonewall_wear_out, 0, 1)
U64_OPT(cb_precreate, "precreate_per_set", precreate, 1, (uint64_t)1 << 40)
U64_OPT(cb_steps, "steps_per_set", steps, 1, (uint64_t)1 << 40)
/* start_index is also checked against the namespace by every phase after a
 * precreate, so whether the user gave it matters ("|0" is the jobfile's
 * default, not a value given) */
static int cb_start_index(void *data, const char *s)
{
	uint64_t v;

	if (mdfio_parse_u64("start_index", s, 0, (uint64_t)1 << 60, &v))
		return 1;
	opts_of(data)->start_index = v;
	opts_of(data)->start_index_set = *s != '|';
	return 0;
}

static int cb_phase(void *data, const char *s)
{
	struct thread_data *td = *(struct thread_data **)data;
	char buf[64];
	const char *v = pick(s, buf, sizeof(buf));
	enum mdfio_phase ph;

	for (ph = MDFIO_PRECREATE; ph <= MDFIO_CLEANUP; ph++) {
		if (strcmp(v, mdfio_phase_name(ph)))
			continue;
		opts_of(data)->phase = ph + 1;
		if (!td)
			return 0;
		/* the phase owns the headline direction. fio parses engine
		 * options after its own, so every fio option this job was
		 * given is known: a refusal here stops fio before any job
		 * runs (a section that takes phase= from [global] is checked
		 * by mdfio_check_run) */
		if (!fio_option_is_set(&td->o, td_ddir))
			td->o.td_ddir = mdfio_phases[ph].rw;
		return mdfio_check_given_options(td, ph);
	}
	return mdfio_error("phase=%s: expected precreate, benchmark or cleanup", s);
}

/* ranks, object_size and root set fio's own numjobs, bs and directory; they
 * exist only so that a jobfile can give those a default (see pick()). */
static int cb_ranks(void *data, const char *s)
{
	struct thread_data *td = *(struct thread_data **)data;
	uint64_t v;

	if (mdfio_parse_u64("ranks", s, 1, 1u << 20, &v))
		return 1;
	if (td)
		td->o.numjobs = (unsigned int)v;
	return 0;
}

static int cb_object_size(void *data, const char *s)
{
	struct thread_data *td = *(struct thread_data **)data;
	uint64_t v;
	int d;

	if (mdfio_parse_u64("object_size", s, 1, 1u << 30, &v))
		return 1;
	for (d = 0; td && d < DDIR_RWDIR_CNT; d++)
		td->o.bs[d] = td->o.min_bs[d] = td->o.max_bs[d] = v;
	return 0;
}

static int cb_root(void *data, const char *s)
{
	struct thread_data *td = *(struct thread_data **)data;
	char buf[PATH_MAX];
	const char *v = pick(s, buf, sizeof(buf));

	if (!*v)
		return mdfio_error("root=%s: expected a directory", s);
	if (td) {
		free(td->o.directory);
		td->o.directory = strdup(v);
	}
	return 0;
}

/* Object content: md-workbench's pattern (-G, --dataPacketType) or mdfio's */
static int cb_data_pattern(void *data, const char *s)
{
	char buf[64];
	int k = mdfio_pattern_kind_parse(pick(s, buf, sizeof(buf)));

	if (k < 0)
		return mdfio_error("data_pattern=%s: expected md-workbench or mdfio", s);
	opts_of(data)->data_pattern = (unsigned int)k;
	return 0;
}

static int cb_packet_type(void *data, const char *s)
{
	char buf[64];
	int t = mdfio_packet_parse(pick(s, buf, sizeof(buf)));

	if (t < 0)
		return mdfio_error("data_packet_type=%s: expected t, o, i or r (timestamp, offset, incompressible, random)", s);
	opts_of(data)->packet_type = (unsigned int)t;
	return 0;
}

/* md-workbench's -G is an int, and -1 there means a seed from the clock,
 * which no other run can know */
static int cb_random_seed(void *data, const char *s)
{
	char buf[64], *end;
	const char *v = pick(s, buf, sizeof(buf));
	long long x;

	errno = 0;
	x = strtoll(v, &end, 10);
	if (!*v || *end || errno || x < INT32_MIN || x > INT32_MAX || x == -1)
		return mdfio_error("random_seed=%s: expected an integer from %d to %d other than -1 (md-workbench's -G -1 takes the seed from the clock)",
				 s, INT32_MIN, INT32_MAX);
	opts_of(data)->random_seed = (int)x;
	return 0;
}

/* The largest waiting factor: a wait a million times an operation's time
 * is already no benchmark; beyond, F x t could overflow the wait in ns. */
#define MDFIO_WAITING_FACTOR_MAX 1e6

/* md-workbench -t: a float; its waits and its log names use that float */
static int cb_waiting_factor(void *data, const char *s)
{
	char buf[64], *end;
	const char *v = pick(s, buf, sizeof(buf));
	double x;

	errno = 0;
	x = strtod(v, &end);
	if (!*v || *end || errno || !(x >= 0 && x <= MDFIO_WAITING_FACTOR_MAX))
		return mdfio_error("waiting_factor=%s: expected a number from 0 to %g (md-workbench -t: each benchmark operation is followed by a wait of this factor times its time)",
				 s, MDFIO_WAITING_FACTOR_MAX);
	opts_of(data)->waiting_factor = (double)(float)x;
	return 0;
}

const struct fio_option mdfio_core_options[] = {
	MDFIO_OPT("phase", cb_phase, NULL,
	    "md-workbench phase: precreate, benchmark or cleanup (required)"),
	MDFIO_OPT("datasets", cb_datasets, "10",
	    "Datasets (directories) per rank, md-workbench -D"),
	MDFIO_OPT("precreate_per_set", cb_precreate, "3000",
	    "Objects per dataset, the FIFO depth, md-workbench -P"),
	MDFIO_OPT("steps_per_set", cb_steps, "1000",
	    "Benchmark steps per dataset per run, md-workbench -I"),
	MDFIO_OPT("rank_offset", cb_rank_offset, "1",
	    "Rank distance to the datasets read and written, md-workbench -O"),
	MDFIO_OPT("start_index", cb_start_index, "|0",
	    "Index of the first object, md-workbench --start-item; a benchmark or cleanup given it checks it against the namespace's FIFO position"),
	MDFIO_OPT("read_only", cb_read_only, "0",
	    "1: benchmark only stats and reads, md-workbench --read-only"),
	MDFIO_OPT("verify_read", cb_verify_read, "0",
	    "1: check owner rank, dataset and index of every object read, md-workbench -X"),
	/* a jobfile names each section's repeat literally */
	MDFIO_OPT("repeat", cb_repeat, "1",
	    "Which benchmark repeat this job section is: 1 to 1000000"),
	MDFIO_OPT("repeats", cb_repeats, "1",
	    "Benchmark repeats wanted, md-workbench -R: a section whose repeat exceeds it does nothing"),
	MDFIO_STR_OPT("latency_log", struct mdfio_options, latency_log,
	    "Prefix of per-operation latency CSVs, md-workbench -L (value|default; empty: off)"),
	MDFIO_STR_OPT("hosts", struct mdfio_options, hosts,
	    "Host names of the fio servers of one run, separated by ',': each takes numjobs ranks in this order (value|default; empty: this fio job's ranks only)"),
	MDFIO_OPT("join_timeout", cb_join_timeout, "30",
	    "Seconds a rank waits at the start of a phase for ranks that no process has started, 1 to 86400 (ranks still busy are waited for without limit)"),
	MDFIO_OPT("ranks", cb_ranks, NULL,
	    "Sets numjobs (the number of ranks); accepts value|default"),
	MDFIO_OPT("object_size", cb_object_size, NULL,
	    "Sets bs (bytes per object, md-workbench -S); accepts value|default"),
	MDFIO_OPT("root", cb_root, NULL,
	    "Sets directory (the namespace root, md-workbench -o); accepts value|default"),
	MDFIO_OPT("data_pattern", cb_data_pattern, "md-workbench",
	    "Object content: md-workbench (IOR's md-workbench's, with random_seed and data_packet_type) or mdfio (a header naming rank, dataset and index)"),
	MDFIO_OPT("data_packet_type", cb_packet_type, "t",
	    "md-workbench --dataPacketType: t, o, i or r (timestamp, offset, incompressible, random)"),
	MDFIO_OPT("random_seed", cb_random_seed, "0",
	    "md-workbench -G: the seed of the object content (md-workbench's default is the clock; give both the same)"),
	MDFIO_OPT("waiting_factor", cb_waiting_factor, "0",
	    "md-workbench -t: after each benchmark operation wait this factor times its time (outside its latency, inside the phase's time); also the factor in latency log names"),
	MDFIO_OPT("adaptive_waiting", cb_adaptive_waiting, "0",
	    "md-workbench -T: 1 on each of the 8 benchmark sections of a repeat (waiting_factor 0, 0.0625, ... 4) and on the cleanup: 8 runs count as one iteration in latency log names"),
	MDFIO_OPT("latency_all", cb_latency_all, "0",
	    "md-workbench --latency-all: 1: the latency logs of all ranks, merged (<op>-all.csv); 0: rank 0's log only"),
	MDFIO_OPT("verbose", cb_verbose, "0",
	    "md-workbench -v: 1: its error lines (a failed stat); 2: also a trace line per operation, on stderr"),
	MDFIO_OPT("stonewall_timer", cb_stonewall_timer, "0",
	    "md-workbench -w: seconds after which a benchmark rank starts no further step (0: off)"),
	MDFIO_OPT("stonewall_wear_out", cb_stonewall_wear_out, "0",
	    "md-workbench -W: 1: at stonewall_timer every rank goes on to the most steps any rank of the run did"),
	MDFIO_STR_OPT("run_info_file", struct mdfio_options, run_info_file,
	    "md-workbench --run-info-file: written with the FIFO position after a precreate or benchmark, read to adopt a namespace md-workbench made (value|default; empty: none)"),
	MDFIO_OPT("ignore_precreate_errors", cb_ignore_precreate_errors, "0",
	    "md-workbench --ignore-precreate-errors: 1 counts a failed create of a precreate or benchmark and goes on; 0 ends the run at the first"),
	{ .name = NULL },
};

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

uint64_t mdfio_phase_units(const struct mdfio_options *eo)
{
	/* phase unset: refused later, by init */
	int steps = eo->phase && mdfio_phases[eo->phase - 1].per_set_is_steps;
	uint64_t per_set = steps ? eo->steps : eo->precreate;
	return per_set * eo->datasets;
}


/* The benchmark sections of the jobfile that share td's root: the largest
 * repeats= any asks for, and whether each repeat up to it has a section.
 * Every job's setup asks, so it is one pass over the jobs, not one per
 * repeat: a jobfile of R repeats took fio's set-up O(R^3) (bench/run's
 * walltime section). */
static unsigned int missing_repeat(struct thread_data *td, unsigned int *wanted)
{
	struct thread_data *t;
	unsigned char *found;
	unsigned int k, missing = 0;
	int i;

	*wanted = 0;
	mdfio_for_each_td(t, i) {
		const struct mdfio_options *o = t->eo;

		if (t->io_ops == td->io_ops && o->phase == MDFIO_BENCHMARK + 1 &&
		    !strcmp(t->o.directory, td->o.directory) && o->repeats > *wanted)
			*wanted = o->repeats;
	}
	if (!*wanted)
		return 0;
	found = calloc((size_t)*wanted + 1, 1);
	if (!found)
		return 1;	/* refused, with the line naming repeat 1 */
	mdfio_for_each_td(t, i) {
		const struct mdfio_options *o = t->eo;

		if (t->io_ops == td->io_ops && o->phase == MDFIO_BENCHMARK + 1 && o->repeat <= *wanted &&
		    !strcmp(t->o.directory, td->o.directory))
			found[o->repeat] = 1;
	}
	for (k = 1; k <= *wanted && !missing; k++)
		if (!found[k])
			missing = k;
	free(found);
	return missing;
}

int mdfio_check_jobfile(struct thread_data *td)
{
	/* fio sets every job up in its main process before the first runs:
	 * each job of the root refuses, so none runs, and one line says why */
	static char said[PATH_MAX];
	unsigned int wanted, k;

	if (!td->o.directory || !(k = missing_repeat(td, &wanted)))
		return 0;
	if (strcmp(said, td->o.directory)) {
		snprintf(said, sizeof(said), "%s", td->o.directory);
		mdfio_error("repeats=%u: this jobfile has no benchmark section with repeat=%u for directory=%s; add sections up to repeat=%u (tools/mdfio-jobfile -R %u writes them) or lower repeats",
			    wanted, k, td->o.directory, wanted, wanted);
	}
	return 1;
}
