/* The engine options every mdfio engine has: their table (fio's
 * --enghelp) and parsers, each taking "value|default". The checks of fio's
 * own options are fio_checks.c's, those of the jobfile jobfile.c's. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "pick.h"

#define MDFIO_REPEATS_MAX 1000000
/* a day: a host that has not started a rank by then will not */
#define MDFIO_JOIN_TIMEOUT_MAX 86400

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
	const char *v = mdfio_pick(s, buf, sizeof(buf));
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
/* 2^44 units of 1000 KiB: beyond any machine's memory, far from overflow */
U64_OPT(cb_lim_free_mem, "lim_free_mem", lim_free_mem, 0, (uint64_t)1 << 44)
U64_OPT(cb_lim_free_mem_phase, "lim_free_mem_phase", lim_free_mem_phase, 0, (uint64_t)1 << 44)
MDFIO_U32_OPT(cb_drop_caches, "drop_caches", struct mdfio_options, drop_caches, 0, 1)
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
	const char *v = mdfio_pick(s, buf, sizeof(buf));
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
 * exist only so that a jobfile can give those a default (see mdfio_pick()). */
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
	const char *v = mdfio_pick(s, buf, sizeof(buf));

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
	int k = mdfio_pattern_kind_parse(mdfio_pick(s, buf, sizeof(buf)));

	if (k < 0)
		return mdfio_error("data_pattern=%s: expected md-workbench or mdfio", s);
	opts_of(data)->data_pattern = (unsigned int)k;
	return 0;
}

static int cb_packet_type(void *data, const char *s)
{
	char buf[64];
	int t = mdfio_packet_parse(mdfio_pick(s, buf, sizeof(buf)));

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
	const char *v = mdfio_pick(s, buf, sizeof(buf));
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
	const char *v = mdfio_pick(s, buf, sizeof(buf));
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
	MDFIO_STR_OPT("run_id", struct mdfio_options, run_id,
	    "Names the run: the same in every fio process of one run, in no other run (a launcher's job id, a script's unique id); a named run that fails keeps its reason in mdfio.ranks, and a fio of it that comes later is refused at once (value|default; empty: unnamed)"),
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
	MDFIO_OPT("lim_free_mem", cb_lim_free_mem, "0",
	    "md-real-io --lim-free-mem: before the phase, take memory until MemFree+Cached+Buffers (or the memory cgroup's headroom) is at most this many units of 1000 KiB, and hold it through the phase (0: off)"),
	MDFIO_OPT("lim_free_mem_phase", cb_lim_free_mem_phase, "0",
	    "md-real-io --lim-free-mem-phase: the same, but the memory is given back before the phase starts: the page cache is evicted down to this, untimed (0: off)"),
	MDFIO_OPT("drop_caches", cb_drop_caches, "0",
	    "1: before the phase, write back and drop the page cache, dentries and inodes (root only; untimed)"),
	{ .name = NULL },
};
