/* Every option of fio's own table, in every fio release from 3.33 to 3.41,
 * and whether an mdfio job accepts it.
 *
 * The rule is an allow-list: an option a job gives (in its section, in
 * [global] or on fio's command line) is accepted only if it cannot change
 * what a phase runs (which units, in what order, at what pace, with which
 * operations) or the per-rank records mdfio-report reads, or if it is at a
 * value the engine has been checked with. Anything else is refused at job
 * start with one line, and so is an option this table does not know (a
 * newer fio). tests/engines/test_fio_options.py runs every entry of the
 * fio it runs with.
 *
 * fio renamed some options, keeping the old name as an alias (allrandrepeat
 * as randrepeat's from 3.35, log_unix_epoch, log_max_value, fdp_pli and
 * fdp_pli_select later): fio marks an option given by either name under its
 * new one, so each name keeps its own entry, for the releases that have it
 * as a name.
 *
 * Options the engine sets itself (numjobs by ranks=, bs by object_size=,
 * directory by root=, rw by phase=, continue_on_error and the disable_*
 * family at job start) are not marked as given by fio, so they are not
 * checked here. */
#include <stddef.h>
#include <string.h>

#include "fio_options.h"

/* The optional arguments after the reason, SINCE("3.N") and LAST("3.N"),
 * mark an option that not every fio from 3.33 on has under this name. */
#define ALLOW(n, why, ...)						\
	{ .name = n, .rule = MDFIO_ALLOW, .check = MDFIO_CHECK_NONE, .reason = why, __VA_ARGS__ }
#define ALLOW_IF(n, chk, why, ...)					\
	{ .name = n, .rule = MDFIO_ALLOW_IF, .check = chk, .reason = why, __VA_ARGS__ }
#define REFUSE(n, why, ...)						\
	{ .name = n, .rule = MDFIO_REFUSE, .check = MDFIO_CHECK_NONE, .reason = why, __VA_ARGS__ }
#define PROFILE(p, n) { .name = n, .profile = p, .rule = MDFIO_REFUSE,	\
	.check = MDFIO_CHECK_NONE,					\
	.reason = "an option of fio's " p " profile, which writes jobs of its own" }
#define SINCE(v) .since = v
#define LAST(v) .last = v

/* reasons several options share */
#define FIO_FILE "it acts on fio's own file, which mdfio never creates or opens (objects are the engine's)"
#define NO_RANDOM "no random offsets are used (a phase's rw is sequential)"
#define OFFSETS "objects have no offsets: fio would only skip units or end the phase early (the phase decides which objects it works on)"
#define COUNT "the phase decides how many units it runs (datasets x precreate_per_set, in the benchmark datasets x steps_per_set)"
#define STOPPED_EARLY "fio's clock would stop a phase in mid-step and leave the namespace interrupted; use stonewall_timer=<seconds> instead (md-workbench -w, which stops the benchmark at a step boundary), with stonewall_wear_out=1 for -W"
#define ADDS_OPS "it adds operations to md-workbench's sequence (fio would count them beside the stats)"
#define VERIFY "fio would verify data of its own; verify_read=1 checks every object read"
#define REPLAY "it replays a trace instead of the phase's units"
#define ZONES "zones divide fio's offsets, and objects have none"
#define PACE "it changes the timed cycle: md-workbench runs its units back to back"
#define FIO_LATENCY "it acts on fio's per-io_u latency, which mdfio does not record (it times each operation itself)"
#define STOPS_RANKS "it stops the other ranks in mid-phase and leaves the namespace interrupted; every rank runs its phase to the end (md-workbench's)"
#define BUFFERS "an object's content is the engine's pattern (which verify_read=1 checks), not fio's buffers"
#define IO_BUFFERS "fio's I/O buffers carry no object data"
#define PLACEMENT "CPU and memory placement of the rank"
#define REPORT "reporting only"
#define LOG "fio's logs: reporting only"
#define ENGINE_SETS "the engine sets it itself at job start"
#define SIZES "bs is the object size: one fixed size (bs= or object_size=)"
#define BACKEND_DIRECT "direct=1 (buffered=0) only on mdfio-aio, which opens objects with O_DIRECT; the other engines refuse it at job start"
#define AVERAGED "log_avg_msec > 0 beside it: fio's per-io_u samples are left to the engine's own statistics (FIO_NOSTATS), so only averaged windows reach this log"
#define IGNORED "deprecated: fio ignores it"
#define STEADY "it ends the job at steady state; the phase decides when it ends"
#define PLACEMENT_HINTS "a data placement directive of fio's io_uring_cmd and xnvme engines for writes to an NVMe device; objects are written through the file system, which places them itself"
#define SPRANDOM "it preconditions an SSD: fio would pick random offsets and write the device's whole capacity, while the phase decides which objects it writes and how many"
#define FIO_REFUSES "deprecated: fio itself refuses it"

const struct mdfio_fio_option mdfio_fio_options[] = {
	ALLOW("description", "kept in fio's JSON after the rank description the engine gives each job"),
	ALLOW("name", "the job's name"),
	ALLOW("wait_for", "fio-level ordering: the job starts after the named one"),
	REFUSE("filename", "objects are named by the engine (<root>/<rank>_<dataset>/file-<n>); set directory= or root="),
	ALLOW("filetype", FIO_FILE, SINCE("3.41")),
	ALLOW_IF("directory", MDFIO_CHECK_DIRECTORY, "one directory, the namespace root (no ':' list)"),
	ALLOW("filename_format", FIO_FILE),
	ALLOW("unique_filename", FIO_FILE),
	ALLOW("lockfile", FIO_FILE),
	REFUSE("opendir", "it adds fio files from a directory tree, and objects are not fio files"),
	ALLOW_IF("rw", MDFIO_CHECK_RW, "the phase's own direction (precreate write, benchmark read, cleanup trim) without a :N suffix; best left unset, phase= sets it"),
	ALLOW("rw_sequencer", "it acts only with rw's :N suffix, which is refused"),
	ALLOW("ioengine", "this engine (mdfio-posix, -uring, -aio or -null)"),
	ALLOW("iodepth", "units in flight (fio caps it at 1 for mdfio-posix); units are independent at any depth"),
	ALLOW("iodepth_batch", "how many units fio queues before it commits them"),
	ALLOW("iodepth_batch_complete_min", "how many ended units fio reaps at least per call"),
	ALLOW("iodepth_batch_complete_max", "how many ended units fio reaps at most per call"),
	ALLOW("iodepth_low", "when fio refills its queue"),
	ALLOW("serialize_overlap", "fio's offsets of the units never overlap, so it holds nothing back"),
	ALLOW_IF("io_submit_mode", MDFIO_CHECK_INLINE, "inline: offload queues units from fio's worker threads, which the engine does not support"),
	REFUSE("size", COUNT),
	REFUSE("io_size", COUNT),
	REFUSE("fill_device", COUNT),
	REFUSE("filesize", COUNT),
	REFUSE("file_append", OFFSETS),
	REFUSE("offset", OFFSETS),
	REFUSE("offset_align", OFFSETS),
	REFUSE("offset_increment", OFFSETS),
	REFUSE("number_ios", COUNT),
	REFUSE("num_range", "it puts several trims in one fio request (multi-range trim), and a cleanup deletes one object per unit", SINCE("3.37")),
	ALLOW_IF("bs", MDFIO_CHECK_BS, "one fixed size for every direction, the object size (md-workbench -S): no range (bs=100-200), no list (bs=1k,4k)"),
	REFUSE("ba", OFFSETS),
	REFUSE("bsrange", SIZES),
	REFUSE("bssplit", SIZES),
	ALLOW("bs_unaligned", "the engine aligns its object buffers itself"),
	ALLOW("bs_is_seq_rand", "with one bs for every direction it changes nothing"),
	ALLOW("randrepeat", NO_RANDOM),
	ALLOW("randseed", NO_RANDOM),
	ALLOW("norandommap", NO_RANDOM),
	ALLOW("softrandommap", NO_RANDOM),
	REFUSE("sprandom", SPRANDOM, SINCE("3.41")),
	REFUSE("spr_num_regions", SPRANDOM, SINCE("3.41")),
	REFUSE("spr_op", SPRANDOM, SINCE("3.41")),
	ALLOW("random_generator", NO_RANDOM),
	ALLOW("random_distribution", NO_RANDOM),
	ALLOW("percentage_random", NO_RANDOM),
	REFUSE("percentage_sequential", FIO_REFUSES),
	ALLOW("allrandrepeat", "the engine draws no random numbers", LAST("3.34")),
	ALLOW_IF("nrfiles", MDFIO_CHECK_ONE_FILE, "1: objects are not fio files (datasets and precreate_per_set decide how many there are)"),
	ALLOW("openfiles", FIO_FILE),
	ALLOW("file_service_type", FIO_FILE),
	ALLOW("fallocate", FIO_FILE),
	ALLOW("fadvise_hint", FIO_FILE),
	REFUSE("fsync", ADDS_OPS),
	REFUSE("fdatasync", ADDS_OPS),
	REFUSE("write_barrier", ADDS_OPS),
	REFUSE("sync_file_range", ADDS_OPS),
	ALLOW_IF("direct", MDFIO_CHECK_BACKEND, BACKEND_DIRECT),
	REFUSE("atomic", "atomic O_DIRECT writes are not checked with mdfio; direct=1 on mdfio-aio opens objects with O_DIRECT"),
	ALLOW_IF("buffered", MDFIO_CHECK_BACKEND, BACKEND_DIRECT),
	ALLOW("overwrite", FIO_FILE),
	ALLOW_IF("loops", MDFIO_CHECK_ONE_LOOP, "1: a phase runs its units once; repeat the benchmark as job sections (repeat=, repeats=; tools/mdfio-jobfile -R N)"),
	ALLOW("numjobs", "the ranks of this fio (ranks= sets it too)"),
	ALLOW("startdelay", "scheduling: a rank that starts later is waited for at the phase's barrier (join_timeout=)"),
	REFUSE("runtime", STOPPED_EARLY),
	REFUSE("time_based", STOPPED_EARLY),
	REFUSE("verify_only", VERIFY),
	REFUSE("ramp_time", "fio would leave the units of the ramp out of the counts and the phase's time; every unit counts (md-workbench's)"),
	ALLOW("clocksource", "fio's own clock (its runtime); the engine times operations with CLOCK_MONOTONIC"),
	ALLOW("mem", IO_BUFFERS),
	ALLOW("iomem_align", IO_BUFFERS),
	REFUSE("verify", VERIFY),
	REFUSE("do_verify", VERIFY),
	ALLOW("verifysort", IGNORED),
	ALLOW("verifysort_nr", IGNORED),
	REFUSE("verify_interval", VERIFY),
	REFUSE("verify_offset", VERIFY),
	REFUSE("verify_pattern", VERIFY),
	REFUSE("verify_pattern_interval", VERIFY, SINCE("3.40")),
	REFUSE("verify_fatal", VERIFY),
	REFUSE("verify_dump", VERIFY),
	REFUSE("verify_async", VERIFY),
	REFUSE("verify_backlog", VERIFY),
	REFUSE("verify_backlog_batch", VERIFY),
	REFUSE("verify_async_cpus", VERIFY),
	REFUSE("experimental_verify", VERIFY),
	REFUSE("verify_state_load", VERIFY),
	REFUSE("verify_state_save", VERIFY),
	REFUSE("verify_write_sequence", VERIFY, SINCE("3.38")),
	REFUSE("verify_header_seed", VERIFY, SINCE("3.40")),
	REFUSE("trim_percentage", VERIFY),
	REFUSE("trim_verify_zero", VERIFY),
	REFUSE("trim_backlog", VERIFY),
	REFUSE("trim_backlog_batch", VERIFY),
	ALLOW("write_iolog", "reporting only: fio's log of its io_us, one per unit (its offsets are fio's, not objects')"),
	REFUSE("read_iolog", REPLAY),
	REFUSE("read_iolog_chunked", REPLAY),
	REFUSE("replay_no_stall", REPLAY),
	REFUSE("replay_redirect", REPLAY),
	REFUSE("replay_scale", REPLAY),
	REFUSE("replay_align", REPLAY),
	REFUSE("replay_time_scale", REPLAY),
	REFUSE("replay_skip", REPLAY),
	REFUSE("merge_blktrace_file", REPLAY),
	REFUSE("merge_blktrace_scalars", REPLAY),
	REFUSE("merge_blktrace_iters", REPLAY),
	ALLOW("exec_prerun", "fio-level control: a command before the job"),
	ALLOW("exec_postrun", "fio-level control: a command after the job"),
	REFUSE("ioscheduler", "fio switches the scheduler only of the device of its own files, and mdfio has none; set /sys/block/<device>/queue/scheduler"),
	REFUSE("zonemode", ZONES),
	REFUSE("zonesize", ZONES),
	REFUSE("zonecapacity", ZONES),
	REFUSE("zonerange", ZONES),
	REFUSE("zoneskip", ZONES),
	REFUSE("read_beyond_wp", ZONES),
	REFUSE("max_open_zones", ZONES),
	REFUSE("job_max_open_zones", ZONES),
	REFUSE("ignore_zone_limits", ZONES),
	REFUSE("zone_reset_threshold", ZONES),
	REFUSE("zone_reset_frequency", ZONES),
	REFUSE("recover_zbd_write_error", ZONES, SINCE("3.40")),
	REFUSE("fdp", PLACEMENT_HINTS, SINCE("3.34")),
	REFUSE("dataplacement", PLACEMENT_HINTS, SINCE("3.38")),
	REFUSE("fdp_pli_select", PLACEMENT_HINTS, SINCE("3.36"), LAST("3.37")),
	REFUSE("plid_select", PLACEMENT_HINTS, SINCE("3.38")),
	REFUSE("fdp_pli", PLACEMENT_HINTS, SINCE("3.34"), LAST("3.37")),
	REFUSE("plids", PLACEMENT_HINTS, SINCE("3.38")),
	REFUSE("dp_scheme", PLACEMENT_HINTS, SINCE("3.38")),
	ALLOW("lockmem", PLACEMENT),
	ALLOW("rwmixread", "it acts only with a mixed rw, which is refused"),
	ALLOW("rwmixwrite", "it acts only with a mixed rw, which is refused"),
	REFUSE("rwmixcycle", FIO_REFUSES),
	ALLOW("nice", "CPU scheduling of the rank"),
	ALLOW("prio", "I/O priority of the rank"),
	ALLOW("prioclass", "I/O priority of the rank"),
	ALLOW("priohint", "I/O priority hint of the rank", SINCE("3.36")),
	REFUSE("thinktime", PACE),
	REFUSE("thinktime_spin", PACE),
	REFUSE("thinkcycles", PACE, SINCE("3.37")),
	REFUSE("thinktime_blocks", PACE),
	REFUSE("thinktime_blocks_type", PACE),
	REFUSE("thinktime_iotime", PACE),
	REFUSE("rate", PACE),
	REFUSE("rate_min", PACE),
	REFUSE("rate_iops", PACE),
	REFUSE("rate_iops_min", PACE),
	REFUSE("rate_process", PACE),
	REFUSE("rate_cycle", PACE),
	REFUSE("rate_ignore_thinktime", PACE),
	REFUSE("max_latency", FIO_LATENCY),
	REFUSE("latency_target", FIO_LATENCY),
	REFUSE("latency_window", FIO_LATENCY),
	REFUSE("latency_percentile", FIO_LATENCY),
	REFUSE("latency_run", FIO_LATENCY),
	ALLOW("invalidate", FIO_FILE),
	REFUSE("sync", "objects are opened without O_SYNC, as md-workbench's; fio would open only its own file with it"),
	REFUSE("write_hint", "fio sets it on its own files only, not on objects"),
	ALLOW_IF("create_serialize", MDFIO_CHECK_SERIALIZE, "1: the engine describes each rank in fio's main process, at file setup (with 0, fio crashes)"),
	ALLOW("create_fsync", FIO_FILE),
	ALLOW("create_on_open", FIO_FILE),
	REFUSE("create_only", "it runs only fio's file setup: the phase would not run and the namespace would be left interrupted"),
	ALLOW("allow_file_create", FIO_FILE),
	ALLOW("allow_mounted_write", FIO_FILE),
	REFUSE("pre_read", "it pre-reads fio's own file, which mdfio never creates"),
	ALLOW("cpumask", PLACEMENT),
	ALLOW("cpus_allowed", PLACEMENT),
	ALLOW("cpus_allowed_policy", PLACEMENT),
	ALLOW("numa_cpu_nodes", PLACEMENT),
	ALLOW("numa_mem_policy", PLACEMENT),
	REFUSE("end_fsync", ADDS_OPS),
	REFUSE("fsync_on_close", ADDS_OPS),
	REFUSE("unlink", "it removes fio's own files; phase=cleanup removes the objects"),
	REFUSE("unlink_each_loop", "it removes fio's own files; phase=cleanup removes the objects"),
	REFUSE("exitall", STOPS_RANKS),
	REFUSE("exit_what", STOPS_RANKS),
	REFUSE("exitall_on_error", STOPS_RANKS),
	ALLOW("stonewall", "fio-level ordering; the engine orders a root's phases without it"),
	ALLOW("new_group", "reporting groups; every rank keeps its own record"),
	ALLOW("thread", "ranks as threads of one process instead of processes"),
	ALLOW("per_job_logs", LOG),
	ALLOW_IF("write_bw_log", MDFIO_CHECK_LOG_AVG, AVERAGED),
	ALLOW("write_lat_log", "fio's clat log gets a row for each create, read and delete the engine times (stat has none; the slat log gets each job's phase time, the lat log stays empty)"),
	ALLOW_IF("write_iops_log", MDFIO_CHECK_LOG_AVG, AVERAGED),
	ALLOW("log_entries", LOG),
	ALLOW("log_avg_msec", LOG),
	ALLOW("log_hist_msec", LOG),
	ALLOW("log_hist_coarseness", LOG),
	ALLOW("write_hist_log", "fio's histogram log of the engine's latency samples: reporting only"),
	ALLOW("log_max_value", LOG, LAST("3.36")),
	ALLOW("log_window_value", LOG, SINCE("3.37")),
	ALLOW("log_offset", LOG),
	ALLOW("log_prio", LOG),
	ALLOW("log_issue_time", "fio's logs: reporting only (the issue time column stays 0: the engine times each operation itself)", SINCE("3.38")),
	REFUSE("log_compression", "fio 3.33 hangs now and then at a job's start with it (its compression workqueue), with any engine; the engine's own latency_log= needs no compression"),
	REFUSE("log_compression_cpus", "fio 3.33 hangs now and then at a job's start with it (its compression workqueue), with any engine; the engine's own latency_log= needs no compression"),
	REFUSE("log_store_compressed", "fio 3.33 hangs now and then at a job's start with it (its compression workqueue), with any engine; the engine's own latency_log= needs no compression"),
	ALLOW("log_unix_epoch", LOG, LAST("3.35")),
	ALLOW("log_alternate_epoch", LOG),
	ALLOW("log_alternate_epoch_clock_id", LOG),
	ALLOW("block_error_percentiles", "reporting only (it stays empty: objects have no blocks)"),
	ALLOW("bwavgtime", REPORT),
	ALLOW("iopsavgtime", REPORT),
	REFUSE("group_reporting", "it merges the ranks' records into one, and mdfio-report needs each rank's own (a phase's time is its slowest rank's)"),
	ALLOW_IF("stats", MDFIO_CHECK_STATS, "1: without statistics fio reports nothing of the job"),
	REFUSE("zero_buffers", BUFFERS),
	REFUSE("refill_buffers", BUFFERS),
	REFUSE("scramble_buffers", BUFFERS),
	REFUSE("buffer_pattern", BUFFERS),
	REFUSE("buffer_compress_percentage", BUFFERS),
	REFUSE("buffer_compress_chunk", BUFFERS),
	REFUSE("dedupe_percentage", BUFFERS),
	REFUSE("dedupe_global", BUFFERS),
	REFUSE("dedupe_mode", BUFFERS),
	REFUSE("dedupe_working_set_percentage", BUFFERS),
	ALLOW_IF("clat_percentiles", MDFIO_CHECK_CLAT_PERCENTILES, "1: fio's percentiles of the engine's samples are md-workbench's quantiles"),
	ALLOW("lat_percentiles", REPORT),
	ALLOW("slat_percentiles", REPORT),
	ALLOW("percentile_list", REPORT),
	ALLOW("significant_figures", REPORT),
	ALLOW("disk_util", REPORT),
	REFUSE("gtod_reduce", "it also turns off the percentiles; the engine keeps fio's clock reads out of each unit already"),
	ALLOW("disable_lat", ENGINE_SETS),
	ALLOW_IF("disable_clat", MDFIO_CHECK_CLAT, "0: the engine sets it itself after fio's setup; given as 1 it also turns off the percentiles"),
	ALLOW("disable_slat", ENGINE_SETS),
	ALLOW("disable_bw_measurement", ENGINE_SETS),
	REFUSE("gtod_cpu", "fio 3.33 crashes with it now and then, with any engine (its clock thread); the engine times operations with CLOCK_MONOTONIC anyway"),
	ALLOW("job_start_clock_id", "reporting only: the clock of each job's job_start in fio's JSON, which mdfio-report does not read", SINCE("3.36")),
	REFUSE("unified_rw_reporting", "it merges the read, write and trim records in which the engine counts reads, creates and deletes"),
	ALLOW("continue_on_error", "the engine sets it: failed operations are counted and the phase goes on (md-workbench's)"),
	REFUSE("ignore_error", "it would hide failed units from fio's error counts"),
	ALLOW("error_dump", REPORT),
	REFUSE("profile", "a profile writes jobs of its own"),
	ALLOW("cgroup", "resource control of the rank"),
	ALLOW("cgroup_nodelete", "resource control of the rank"),
	ALLOW("cgroup_weight", "resource control of the rank"),
	ALLOW("uid", "the user the rank runs as (the namespace's permissions apply)"),
	ALLOW("gid", "the group the rank runs as (the namespace's permissions apply)"),
	ALLOW("kb_base", "how fio reads and prints sizes"),
	ALLOW("unit_base", REPORT),
	ALLOW("hugepage-size", IO_BUFFERS),
	REFUSE("flow_id", PACE),
	REFUSE("flow", PACE),
	ALLOW("flow_watermark", IGNORED),
	REFUSE("flow_sleep", PACE),
	REFUSE("steadystate", STEADY),
	REFUSE("steadystate_duration", STEADY),
	REFUSE("steadystate_ramp_time", STEADY),
	REFUSE("steadystate_check_interval", STEADY, SINCE("3.35")),
	PROFILE("tiobench", "size"),
	PROFILE("tiobench", "block"),
	PROFILE("tiobench", "numruns"),
	PROFILE("tiobench", "dir"),
	PROFILE("tiobench", "threads"),
	PROFILE("act", "device-names"),
	PROFILE("act", "load"),
	PROFILE("act", "test-duration"),
	PROFILE("act", "threads-per-queue"),
	PROFILE("act", "read-req-num-512-blocks"),
	PROFILE("act", "large-block-op-kbytes"),
	PROFILE("act", "prep"),
	{ .name = NULL },
};

static int same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

const struct mdfio_fio_option *mdfio_fio_option_find(const char *name,
						     const char *profile)
{
	const struct mdfio_fio_option *e;

	for (e = mdfio_fio_options; e->name; e++)
		if (!strcmp(e->name, name) && same(e->profile, profile))
			return e;
	return NULL;
}
