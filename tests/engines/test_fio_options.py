"""fio's own options against mdfio's table of them (engines/lib/fio_options.c):
every option of the running fio's table has a rule there; every refused
one is refused with one line naming it, with nothing made in the root; every
allowed one runs and counts right. The table covers several fio releases;
each test takes the entries of the running fio's release.

A refusal stops fio while it reads the jobfile, so refusals are quick. An
allowed option is a run of all three phases on mdfio-null (no object is
touched); fio mostly waits between its jobs, so those runs go many at once."""
import concurrent.futures
import functools
import os
import re
import subprocess
from pathlib import Path

import pytest

import mdfio.fio
from conftest import SANITIZER_REPORT, SOURCE_ROOT, engine_path, fio_env

HELPER = Path(os.environ.get("MDFIO_TEST_LIB_DIR", SOURCE_ROOT / "build" / "tests")) / "fio_option_table.so"
D, P, I, S, N = 2, 6, 4, 100, 2
PHASES = ("precreate", "benchmark", "cleanup")
WORKERS = 8
# the oldest fio release engines/lib/fio_options.c covers: its entries without
# SINCE() are this release's options
OLDEST = (3, 33)

# A plausible value of every refused option ({dir}: the run's directory,
# {root}: the namespace root, which must stay empty)
REFUSED_VALUES = {
    "filename": "f", "opendir": "{root}", "size": "1m", "io_size": "1m", "fill_device": "1",
    "filesize": "1m", "file_append": "1", "offset": "4k", "offset_align": "4k",
    "offset_increment": "4k", "number_ios": "5", "num_range": "2", "ba": "4k", "bsrange": "100-200",
    "bssplit": "100/50:200/50", "percentage_sequential": "50", "fsync": "1", "fdatasync": "1",
    "write_barrier": "1", "sync_file_range": "wait_before:8", "atomic": "1", "runtime": "5",
    "time_based": "1", "verify_only": "1", "ramp_time": "1", "verify": "md5", "do_verify": "1",
    "verify_interval": "512", "verify_offset": "64", "verify_pattern": "0xff", "verify_fatal": "1",
    "verify_dump": "1", "verify_async": "1", "verify_backlog": "16", "verify_backlog_batch": "4",
    "verify_async_cpus": "0", "experimental_verify": "1", "verify_state_load": "1",
    "verify_state_save": "1", "trim_percentage": "10", "trim_verify_zero": "1", "trim_backlog": "16",
    "trim_backlog_batch": "4", "read_iolog": "{dir}/trace", "read_iolog_chunked": "1",
    "replay_no_stall": "1", "replay_redirect": "/dev/null", "replay_scale": "2", "replay_align": "512",
    "replay_time_scale": "50", "replay_skip": "read", "merge_blktrace_file": "{dir}/merged",
    "merge_blktrace_scalars": "100", "merge_blktrace_iters": "1", "ioscheduler": "none",
    "zonemode": "strided", "zonesize": "1m", "zonecapacity": "1m", "zonerange": "1m", "zoneskip": "1m",
    "read_beyond_wp": "1", "max_open_zones": "1", "job_max_open_zones": "1", "ignore_zone_limits": "1",
    "zone_reset_threshold": "0.5", "zone_reset_frequency": "0.5", "rwmixcycle": "100",
    "thinktime": "1000", "thinktime_spin": "10", "thinktime_blocks": "2",
    "thinktime_blocks_type": "complete", "thinktime_iotime": "1s", "rate": "1m", "rate_min": "1k",
    "rate_iops": "100", "rate_iops_min": "1", "rate_process": "poisson", "rate_cycle": "500",
    "rate_ignore_thinktime": "1", "max_latency": "1s", "latency_target": "10ms", "latency_window": "1s",
    "latency_percentile": "99", "latency_run": "1", "sync": "1", "write_hint": "short",
    "create_only": "1", "pre_read": "1", "end_fsync": "1", "fsync_on_close": "1", "unlink": "1",
    "unlink_each_loop": "1", "exitall": "1", "exit_what": "all", "exitall_on_error": "1",
    "group_reporting": "1", "zero_buffers": "1", "refill_buffers": "1", "scramble_buffers": "1",
    "buffer_pattern": "0xaa", "buffer_compress_percentage": "50", "buffer_compress_chunk": "512",
    "dedupe_percentage": "50", "dedupe_global": "1", "dedupe_mode": "repeat",
    "dedupe_working_set_percentage": "50", "gtod_reduce": "1", "gtod_cpu": "0", "log_compression": "1m", "log_compression_cpus": "0",
    "log_store_compressed": "1", "unified_rw_reporting": "mixed",
    "ignore_error": "EIO", "profile": "tiobench", "flow_id": "1", "flow": "1", "flow_sleep": "10",
    "steadystate": "iops:10%", "steadystate_duration": "10s", "steadystate_ramp_time": "1s",
    # options of newer fio releases than 3.33
    "sprandom": "1", "spr_num_regions": "10", "spr_op": "0.2", "verify_pattern_interval": "512",
    "verify_write_sequence": "0", "verify_header_seed": "0", "recover_zbd_write_error": "1",
    "fdp": "1", "dataplacement": "fdp", "fdp_pli_select": "roundrobin", "plid_select": "roundrobin",
    "fdp_pli": "0,1", "plids": "0,1",
    # fio reads the scheme while it parses the job: an existing file
    "dp_scheme": "{dir}/job.fio",
    "thinkcycles": "1000", "steadystate_check_interval": "2s",
    # the options fio's tiobench and act profiles add to its table
    "block": "4096", "numruns": "2", "dir": "{root}", "threads": "2", "device-names": "/dev/null",
    "load": "2", "test-duration": "10s", "threads-per-queue": "2", "read-req-num-512-blocks": "2",
    "large-block-op-kbytes": "64", "prep": "1",
}

# Each allowed option given a value: [global] options, or per section
# ("@precreate": {...}); {dir} and {root} as above
ALLOWED = {
    "description": "a run of the option test", "name": "renamed",
    "wait_for": {"@benchmark": {"wait_for": "precreate-0"}},
    "directory": {"directory": "{root}"},
    "filename_format": "f.$jobnum", "unique_filename": "1", "lockfile": "exclusive",
    "rw": {"@precreate": {"rw": "write"}, "@benchmark": {"rw": "read"}, "@cleanup": {"rw": "trim"}},
    "rw_sequencer": "identical", "iodepth": "4",
    "iodepth_batch": {"iodepth": "8", "iodepth_batch": "4"},
    "iodepth_batch_complete_min": {"iodepth": "8", "iodepth_batch_complete_min": "2"},
    "iodepth_batch_complete_max": {"iodepth": "8", "iodepth_batch_complete_max": "2"},
    "iodepth_low": {"iodepth": "8", "iodepth_low": "2"},
    "serialize_overlap": {"iodepth": "8", "serialize_overlap": "1"},
    "io_submit_mode": "inline", "bs": str(S), "bs_unaligned": "1", "bs_is_seq_rand": "1",
    "randrepeat": "0", "randseed": "7", "norandommap": "1", "softrandommap": "1",
    "random_generator": "lfsr", "random_distribution": "zipf:1.2", "percentage_random": "50",
    "allrandrepeat": "1", "nrfiles": "1", "openfiles": "1", "file_service_type": "sequential",
    "fallocate": "none", "fadvise_hint": "sequential", "direct": "0", "buffered": "1",
    "overwrite": "1", "loops": "1", "numjobs": "3", "startdelay": "100ms",
    "clocksource": "clock_gettime", "mem": "mmap", "iomem_align": "4096", "verifysort": "1",
    "verifysort_nr": "1", "write_iolog": "{dir}/io.log", "exec_prerun": "true",
    "exec_postrun": "true", "lockmem": "1m", "rwmixread": "30", "rwmixwrite": "30", "nice": "1",
    "prio": "4", "prioclass": "2", "invalidate": "0", "create_serialize": "1", "create_fsync": "0",
    "create_on_open": "1", "allow_file_create": "0", "allow_mounted_write": "1", "cpumask": "1",
    "cpus_allowed": "0", "cpus_allowed_policy": "split", "numa_cpu_nodes": "0",
    "numa_mem_policy": "local", "stonewall": "1", "new_group": "1", "thread": "1",
    "per_job_logs": {"write_lat_log": "{dir}/lat", "per_job_logs": "0"},
    "write_bw_log": {"write_bw_log": "{dir}/bw", "log_avg_msec": "10"},
    "write_lat_log": "{dir}/lat",
    "write_iops_log": {"write_iops_log": "{dir}/iops", "log_avg_msec": "10"},
    "log_entries": {"write_lat_log": "{dir}/lat", "log_entries": "2048"},
    "log_avg_msec": {"write_lat_log": "{dir}/lat", "log_avg_msec": "10"},
    "log_hist_msec": {"write_hist_log": "{dir}/hist", "log_hist_msec": "10"},
    "log_hist_coarseness": {"write_hist_log": "{dir}/hist", "log_hist_msec": "10", "log_hist_coarseness": "2"},
    "write_hist_log": {"write_hist_log": "{dir}/hist", "log_hist_msec": "10"},
    "log_max_value": {"write_lat_log": "{dir}/lat", "log_avg_msec": "10", "log_max_value": "1"},
    "log_offset": {"write_lat_log": "{dir}/lat", "log_offset": "1"},
    "log_prio": {"write_lat_log": "{dir}/lat", "log_prio": "1"},
    "log_unix_epoch": {"write_lat_log": "{dir}/lat", "log_unix_epoch": "1"},
    "log_alternate_epoch": {"write_lat_log": "{dir}/lat", "log_alternate_epoch": "1"},
    "log_alternate_epoch_clock_id": {"write_lat_log": "{dir}/lat", "log_alternate_epoch": "1",
                                     "log_alternate_epoch_clock_id": "1"},
    "block_error_percentiles": "1", "bwavgtime": "100", "iopsavgtime": "100", "stats": "1",
    "clat_percentiles": "1", "lat_percentiles": "1", "slat_percentiles": "1",
    "percentile_list": "25:50:75:90:99", "significant_figures": "4", "disk_util": "0",
    "disable_lat": "1", "disable_clat": "0", "disable_slat": "1", "disable_bw_measurement": "1",
    "continue_on_error": "none", "error_dump": "1", "cgroup": "mdfio-test",
    "cgroup_nodelete": {"cgroup": "mdfio-test", "cgroup_nodelete": "0"},
    "uid": "0", "gid": "0", "kb_base": "1000", "unit_base": "8", "hugepage-size": "2m",
    "flow_watermark": "1",
    # options of newer fio releases than 3.33 (filetype: the type furthest
    # from what fio's own file is)
    "filetype": "block", "priohint": "1", "job_start_clock_id": "1",
    "log_window_value": {"write_lat_log": "{dir}/lat", "log_avg_msec": "10", "log_window_value": "both"},
    "log_issue_time": {"write_lat_log": "{dir}/lat", "log_offset": "1", "log_issue_time": "1"},
}
# allowed options no run gives a value of its own
NOT_RUN = {
    "ioengine": "every job gives it: the engine",
    # fio sets it up after the engine's init; where the blkio controller
    # takes no weight (no BFQ), fio fails the job there
    "cgroup_weight": "needs a blkio controller that takes weights",
}

# ALLOW_IF options at a value the engine was not checked with: (option
# lines, the option the refusal names)
NOT_ACCEPTED = [
    ({"rw": "write:4"}, "rw"), ({"rw": "randwrite"}, "rw"), ({"rw": "read"}, "rw"),
    ({"bs": "100-200"}, "bs"), ({"bs": "1k,4k"}, "bs"),
    ({"directory": "{root}:{root}"}, "directory"),
    ({"loops": "2"}, "loops"), ({"nrfiles": "2"}, "nrfiles"),
    ({"direct": "1"}, "direct"), ({"buffered": "0"}, "direct"),
    ({"io_submit_mode": "offload"}, "io_submit_mode"), ({"create_serialize": "0"}, "create_serialize"),
    ({"stats": "0"}, "stats"), ({"clat_percentiles": "0"}, "clat_percentiles"),
    ({"disable_clat": "1"}, "disable_clat"),
    ({"write_bw_log": "{dir}/bw"}, "write_bw_log"), ({"write_iops_log": "{dir}/iops"}, "write_iops_log"),
]

# the options issue 13 found slipping through, each its own case
ISSUE_EXAMPLES = [
    ({"offset": "4k"}, "offset"), ({"offset_increment": "4k"}, "offset_increment"),
    ({"rw": "write:4"}, "rw"), ({"bs": "100-200"}, "bs"), ({"bs": "1k,4k"}, "bs"),
    ({"ramp_time": "1"}, "ramp_time"), ({"thinktime": "1000"}, "thinktime"), ({"fsync": "1"}, "fsync"),
    ({"verify": "md5"}, "verify"), ({"group_reporting": "1"}, "group_reporting"),
]


def release(version):
    """(3, 41) of "fio-3.41" or "3.41"; a build past a release
    ("fio-3.41-12-gabcdef") as that release."""
    m = re.match(r"(?:fio-)?(\d+)\.(\d+)", version)
    assert m, version
    return int(m[1]), int(m[2])


@functools.lru_cache(maxsize=None)
def helper_tables():
    """The running fio's release, its options ({(name, profile or None):
    row} in table order) and every entry of mdfio's table, of whichever
    release ([row] in table order): the helper, loaded as an engine, prints
    them for the fio that loaded it."""
    proc = subprocess.run(["fio", "--name=table", f"--ioengine=external:{HELPER}"],
                          capture_output=True, text=True, env=fio_env())
    assert proc.returncode == 0, proc.stderr
    version, fio, entries = None, {}, []
    for line in proc.stdout.splitlines():
        kind, name, *rest = line.split("\t")
        if kind == "version":
            version = release(name)
        elif kind == "fio":
            alias, profile, usable = rest
            fio[(name, None if profile == "-" else profile)] = {"alias": None if alias == "-" else alias,
                                                                 "usable": usable}
        elif kind == "mdfio":
            profile, since, last, rule, reason = rest
            entries.append({"key": (name, None if profile == "-" else profile),
                            "since": None if since == "-" else since, "last": None if last == "-" else last,
                            "rule": rule, "reason": reason})
    assert version and fio and entries, proc.stdout
    return version, fio, entries


def of_release(entry, version):
    """Whether fio release version has the entry's option under its name."""
    return (entry["since"] is None or release(entry["since"]) <= version) and \
        (entry["last"] is None or version <= release(entry["last"]))


def tables():
    """(fio's options, mdfio's table for the running fio's release), each
    {(name, profile or None): row} in table order."""
    version, fio, entries = helper_tables()
    return fio, {e["key"]: e for e in entries if of_release(e, version)}


def rule_of(name, profile=None):
    return tables()[1][(name, profile)]["rule"]


def shadowed(key):
    """A profile's option that fio's own of the same name hides from a job."""
    name, profile = key
    return profile is not None and (name, None) in tables()[0]


def jobtext(root, options, phases=PHASES, engine="null", numjobs=N):
    """The jobfile mdfio.fio writes, with options: {name: value} in
    [global], or {"@phase": {name: value}} in that phase's section."""
    flat = {"datasets": D, "precreate_per_set": P, "steps_per_set": I,
            **{k: v for k, v in options.items() if not k.startswith("@")}}
    numjobs, bs = flat.pop("numjobs", numjobs), flat.pop("bs", S)
    text = mdfio.fio.jobfile(list(phases), root, engine_path(engine), numjobs=numjobs, bs=bs, **flat)
    for i, phase in enumerate(phases):
        extra = options.get(f"@{phase}", {})
        head = mdfio.fio.section_name(phase, i)
        text = text.replace(f"{head}\n", f"{head}\n" + "".join(f"{k}={v}\n" for k, v in extra.items()))
    return text


def run(tmp_path, tag, options, args=(), env=None, **kw):
    """fio in tmp_path/tag, on a jobfile of its own there (root: tag/root),
    with the variables env; the run, its root. {dir} and {root} in values
    are the run's."""
    work = tmp_path / re.sub(r"[^\w.-]", "_", tag)
    root = work / "root"
    root.mkdir(parents=True)

    def fill(v):
        return {k: fill(x) for k, x in v.items()} if isinstance(v, dict) else \
            str(v).format(dir=work, root=root)
    text = jobtext(root, fill(options), **kw)
    # in the run's directory: fio writes some files where it runs (the
    # output of exec_prerun, logs with relative names); env: for fio only
    prefix = ["env", "-C", work, *(f"{k}={v}" for k, v in (env or {}).items())]
    result = mdfio.fio.run(work / "job.fio", text, args=[fill(a) for a in args], prefix=prefix,
                           env=fio_env(), timeout=300)
    assert not SANITIZER_REPORT.search(result.stderr), result.stderr
    return result, root


def many(fn, cases):
    """fn(case) for every case, WORKERS at once; the problems found, each
    a string (fn returns None when there is none)."""
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        return [p for p in pool.map(fn, cases) if p]


def refusal_problem(result, root, name):
    """What is wrong with a refusal of option name, or None."""
    ours = result.mdfio_lines()
    if result.rc == 0:
        return f"{name}: fio exited 0\n{result.stderr}"
    if len(ours) != 1 or not re.match(rf"mdfio: {re.escape(name)}\b", ours[0]):
        return f"{name}: expected one line 'mdfio: {name} ...', got {ours}\n{result.stderr}"
    if os.listdir(root):
        return f"{name}: the root holds {sorted(os.listdir(root))}"
    return None


def counting_problem(result, root, what, numjobs=N):
    """What is wrong with a run of the three phases, or None: every rank
    counts every unit and operation, no error, and cleanup leaves nothing."""
    if result.rc or result.mdfio_lines() or result.json is None:
        return f"{what}: rc={result.rc}\n{result.stderr}"
    want = {"precreate-0": {"write": D * P}, "benchmark-1": {"read": D * I, "sync": D * I},
            "cleanup-2": {"trim": D * P}}
    for name, slots in want.items():
        jobs = result.jobs(name)
        if len(jobs) != numjobs:
            return f"{what}: {len(jobs)} records of {name}, expected one per rank ({numjobs})"
        for j in jobs:
            got = {k: j[k]["total_ios"] for k in slots}
            if got != slots or j["total_err"] or not j.get("desc", "").startswith("mdfio rank="):
                return f"{what}: {name}: {got}, errors {j['total_err']}, desc {j.get('desc')!r}; expected {slots}"
            if "write" in slots and j["write"]["io_bytes"] != D * P * S:
                return f"{what}: {name}: io_bytes {j['write']['io_bytes']}, expected {D * P * S}"
            # a step's create and delete have latency slots of their own
            ops = {k: j[k]["clat_ns"]["N"] for k in ("write", "trim")}
            if "sync" in slots and ops != {"write": D * I, "trim": D * I}:
                return f"{what}: {name}: creates and deletes {ops}, expected {D * I} each"
    if os.listdir(root):
        return f"{what}: the root holds {sorted(os.listdir(root))} after cleanup"
    return None


def label(key):
    name, profile = key
    return f"{name} ({profile} profile)" if profile else name


def test_every_fio_option_has_a_rule():
    version, _, entries = helper_tables()
    fio, ours = tables()
    release_name = "fio %d.%d" % version
    missing = [label(k) for k in fio if k not in ours]
    extra = [label(k) for k in ours if k not in fio]
    assert not missing, f"{release_name}'s options without a rule in engines/lib/fio_options.c " \
        f"(or with one whose SINCE()/LAST() leave {release_name} out): {', '.join(missing)}"
    assert not extra, f"rules in engines/lib/fio_options.c for options {release_name} has not " \
        f"(SINCE()/LAST() say which releases have one): {', '.join(extra)}"
    assert list(fio) == list(ours), f"engines/lib/fio_options.c is not in the order of {release_name}'s table"
    for e in entries:
        assert e["rule"] in ("ALLOW", "ALLOW_IF", "REFUSE") and len(e["reason"]) > 10, e
        since, last = (release(e[k]) if e[k] else None for k in ("since", "last"))
        assert not (since and last) or since <= last, e
    # one entry per option in any one release, or the engine would find
    # only the first (two entries' releases overlap from one's first on)
    for v in {release(e["since"]) for e in entries if e["since"]} | {OLDEST, version}:
        keys = [e["key"] for e in entries if of_release(e, v)]
        assert len(keys) == len(set(keys)), "fio %d.%d: more than one entry for an option" % v


def test_cmdhelp_lists_only_options_with_a_rule():
    """fio --cmdhelp=all, fio's own list of its options (it leaves out the
    deprecated ones, the profiles' and a few nested ones): each has a rule."""
    out = subprocess.run(["fio", "--cmdhelp=all"], capture_output=True, text=True, env=fio_env()).stdout
    names = re.findall(r"^\s*(\S+?)\s*: ", out, re.M)
    assert len(names) > 150, out
    missing = [n for n in names if (n, None) not in tables()[1]]
    assert not missing, f"fio options without a rule in engines/lib/fio_options.c: {', '.join(missing)}"


def test_every_refused_option_is_refused_with_one_line(tmp_path):
    fio, ours = tables()
    keys = [k for k, row in ours.items() if row["rule"] == "REFUSE" and not shadowed(k)]
    assert not [k[0] for k in keys if k[0] not in REFUSED_VALUES], "refused options without a test value"

    def check(key):
        name = key[0]
        result, root = run(tmp_path, name, {name: REFUSED_VALUES[name]}, phases=("precreate",))
        if fio[key]["usable"] == "deprecated":
            # fio refuses it itself, before the engine sees it (saying so
            # where its output goes)
            said = result.stdout + result.stderr + (root.parent / "job.json").read_text()
            ok = result.rc and f"Option {name} is deprecated" in said and not os.listdir(root)
            return None if ok else f"{name}: deprecated, but fio did not refuse it\n{result.stderr}"
        return refusal_problem(result, root, name)
    problems = many(check, keys)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("options,name", ISSUE_EXAMPLES, ids=[f"{k}={v}" for (o, _) in ISSUE_EXAMPLES
                                                            for k, v in o.items()])
def test_issue_13_examples_are_refused(tmp_path, options, name):
    result, root = run(tmp_path, name, options, phases=("precreate",))
    assert refusal_problem(result, root, name) is None, refusal_problem(result, root, name)


@pytest.mark.parametrize("options,name", NOT_ACCEPTED, ids=[f"{k}={v}" for (o, _) in NOT_ACCEPTED
                                                          for k, v in o.items()])
def test_allow_if_option_at_another_value_is_refused(tmp_path, options, name):
    assert rule_of(next(iter(options))) == "ALLOW_IF"
    result, root = run(tmp_path, name, options, phases=("precreate",))
    assert refusal_problem(result, root, name) is None, refusal_problem(result, root, name)


def test_an_alias_is_refused_under_the_options_name(tmp_path):
    fio, ours = tables()
    cases = [(row["alias"], name) for (name, p), row in fio.items()
             if row["alias"] and ours[(name, p)]["rule"] == "REFUSE"]
    assert {"fileoffset", "timeout", "io_limit"} <= {a for a, _ in cases}, cases

    def check(case):
        alias, name = case
        result, root = run(tmp_path, alias, {alias: REFUSED_VALUES[name]}, phases=("precreate",))
        return refusal_problem(result, root, name)
    problems = many(check, cases)
    assert not problems, "\n".join(problems)


def test_every_allowed_option_runs_and_counts_right(tmp_path):
    fio, ours = tables()
    keys = [k for k, row in ours.items() if row["rule"] != "REFUSE" and k[1] is None]
    assert not [k[0] for k in keys if k[0] not in ALLOWED and k[0] not in NOT_RUN], \
        "allowed options without a test value"
    cases = [(k[0], ALLOWED[k[0]] if isinstance(ALLOWED[k[0]], dict) else {k[0]: ALLOWED[k[0]]})
             for k in keys if k[0] in ALLOWED and fio[k]["usable"] != "unsupported"]
    # an allowed option given under its alias (an old name of it, for some)
    cases += [(alias, {alias if k == n else k: v for k, v in options.items()})
              for n, options in cases if (alias := fio[(n, None)]["alias"]) and n in options]

    def check(case):
        name, options = case
        result, root = run(tmp_path, f"allow-{name}", options)
        flat = {k: v for k, v in options.items() if not k.startswith("@")}
        return counting_problem(result, root, f"{name} ({options})", numjobs=int(flat.get("numjobs", N)))
    problems = many(check, cases)
    assert not problems, "\n".join(problems)


def test_averaged_bw_and_iops_logs_have_rows(tmp_path):
    """write_bw_log and write_iops_log are accepted with log_avg_msec: fio
    then logs the units of each window."""
    # fio's helper thread sleeps for up to bwavgtime and iopsavgtime while
    # no job runs, and takes its first samples late: short sleeps, and a
    # cleanup of many objects
    result, root = run(tmp_path, "logs", {"write_bw_log": "{dir}/bw", "write_iops_log": "{dir}/iops",
                                          "log_avg_msec": "1", "bwavgtime": "10", "iopsavgtime": "10",
                                          "precreate_per_set": "100000"},
                       phases=("precreate", "cleanup"), numjobs=1)
    assert result.rc == 0, result.stderr
    for log in ("bw_bw.2.log", "iops_iops.2.log"):
        rows = [line.split(", ") for line in (root.parent / log).read_text().splitlines()]
        # time, value (bytes or units per s), ddir 2 (trim: the deletes)
        assert rows and all(r[2] == "2" for r in rows) and any(int(r[1]) > 0 for r in rows), (log, rows[:5])


def test_a_refusal_in_a_later_section_stops_every_job(tmp_path):
    """phase= in [global]: no engine option in the section with the
    refused option, so fio parses it without the engine. Every mdfio job
    of the run is checked in fio's main process before any job starts:
    nothing runs, and one line for the three ranks."""
    work = tmp_path / "later"
    root = work / "root"
    root.mkdir(parents=True)
    text = f"[global]\nioengine=external:{engine_path('null')}\ndirectory={root}\nbs={S}\nnumjobs=3\n" \
           f"datasets={D}\nprecreate_per_set={P}\nphase=precreate\n\n[first]\n\n[second]\nstonewall\nthinktime=1000\n"
    result = mdfio.fio.run(work / "job.fio", text, env=fio_env(), timeout=300)
    assert not SANITIZER_REPORT.search(result.stderr), result.stderr
    assert refusal_problem(result, root, "thinktime") is None, refusal_problem(result, root, "thinktime")


def test_an_option_on_the_command_line_is_refused(tmp_path):
    result, root = run(tmp_path, "cmdline", {}, args=["--offset=4k"], phases=("precreate",))
    assert refusal_problem(result, root, "offset") is None, refusal_problem(result, root, "offset")


def test_an_option_of_a_newer_fio_is_refused(tmp_path):
    """An option fio has and the table has not is refused, by its name
    (the helper, preloaded, adds one to fio's table)."""
    preload = " ".join(x for x in (os.environ.get("MDFIO_PRELOAD"), str(HELPER)) if x)
    env = {"LD_PRELOAD": preload, "MDFIO_TEST_NEWER_FIO": "1"}
    result, root = run(tmp_path, "newer", {"mdfio_test_newer_option": "1"}, phases=("precreate",), env=env)
    assert refusal_problem(result, root, "mdfio_test_newer_option") is None, result.stderr
    assert "not checked with mdfio" in result.mdfio_lines()[0]


def test_the_engines_own_options_set_fio_options_unchecked(tmp_path):
    """ranks=, object_size= and root= set numjobs, bs and directory, and
    phase= sets rw: fio does not mark those as given, so nothing is
    refused (and a jobfile without them runs as with them)."""
    work = tmp_path / "own"
    root = work / "root"
    root.mkdir(parents=True)
    text = f"[global]\nioengine=external:{engine_path('null')}\nranks={N}\nobject_size={S}\nroot={root}\n" \
           f"datasets={D}\nprecreate_per_set={P}\nsteps_per_set={I}\n"
    for i, phase in enumerate(PHASES):
        text += f"\n{mdfio.fio.section_name(phase, i)}\nphase={phase}\n" + ("stonewall\n" if i else "")
    result = mdfio.fio.run(work / "job.fio", text, env=fio_env(), timeout=300)
    assert counting_problem(result, root, "ranks/object_size/root") is None, result.stderr
