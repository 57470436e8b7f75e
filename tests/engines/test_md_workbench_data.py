"""Object content against IOR's md-workbench (-G seed, --dataPacketType):
mdfio writes byte for byte what md-workbench writes, and each program's
verify accepts the other's objects.

Everywhere: objects md-workbench wrote, recorded in
tests/fixtures/md-workbench (its README says how), against real fio runs.
Where md-workbench can run (MDFIO_MD_WORKBENCH names the binary, else
md-workbench on PATH; more than one rank needs mpirun): the round trip with
the real program, both ways."""
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import MDW_RANKS, job, namespace, run_fio

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "md-workbench"
CASES = json.loads((FIXTURES / "cases.json").read_text())["cases"]


def options(ranks, datasets, precreate, size, seed, packet, **extra):
    return dict(numjobs=ranks, bs=size, datasets=datasets, precreate_per_set=precreate,
                random_seed=seed, data_packet_type=packet, **extra)


def case_options(case, **extra):
    return options(case["ranks"], case["datasets"], case["precreate"], case["size"], case["seed"],
                   case["packet"], **extra)


def objects(root):
    """{"<rank>_<d>/file-<i>": bytes} of a namespace."""
    return {f"{ds}/file-{i}": (Path(root) / ds / f"file-{i}").read_bytes()
            for ds, idx in namespace(root).items() for i in idx}


def read_errors(run):
    return sum(j["read"]["drop_ios"] for j in run.jobs())


def reads(run):
    return sum(j["read"]["clat_ns"]["N"] for j in run.jobs())


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_mdfio_writes_and_verifies_recorded_objects(tmpfs, tmp_path, case):
    """mdfio's precreate and first benchmark step write the recorded
    objects byte for byte; its verify_read accepts md-workbench's bytes
    (copied over its own before the benchmark reads them)."""
    p = case["precreate"]
    opts = case_options(case, steps_per_set=p, verify_read=1)
    run_fio(job(["precreate"], tmpfs, **opts), tmp_path, check=True)
    mine = objects(tmpfs)
    recorded = [o for o in case["objects"] if int(o.rsplit("-", 1)[1]) < p]
    for obj in recorded:
        assert mine[obj] == (FIXTURES / case["name"] / obj).read_bytes(), obj
        shutil.copyfile(FIXTURES / case["name"] / obj, tmpfs / obj)
    run = run_fio(job(["benchmark"], tmpfs, **opts), tmp_path, check=True)
    assert (reads(run), read_errors(run)) == (case["ranks"] * case["datasets"] * p, 0)
    mine = objects(tmpfs)
    for obj in set(case["objects"]) - set(recorded):
        assert mine[obj] == (FIXTURES / case["name"] / obj).read_bytes(), obj


@pytest.mark.parametrize("other", [dict(random_seed=43), dict(data_packet_type="i"),
                                   dict(data_pattern="mdfio")], ids=["seed", "packet", "pattern"])
def test_verify_read_refuses_objects_of_another_pattern(tmpfs, tmp_path, other):
    opts = options(2, 2, 3, 8200, 42, "o", steps_per_set=3, verify_read=1)
    run_fio(job(["precreate"], tmpfs, **opts), tmp_path, check=True)
    run = run_fio(job(["benchmark"], tmpfs, read_only=1, **{**opts, **other}), tmp_path, check=False)
    assert run.rc != 0 and read_errors(run) == 2 * 2 * 3, run.stderr


def test_pattern_options_refuse_bad_values_in_one_line(tmpfs, tmp_path):
    for opt, want in [("data_pattern=ior", "data_pattern=ior: expected md-workbench or mdfio"),
                      ("data_packet_type=x", "data_packet_type=x: expected t, o, i or r"),
                      ("random_seed=-1", "random_seed=-1: expected an integer from -2147483648 to 2147483647"),
                      ("random_seed=2147483648", "random_seed=2147483648: expected an integer")]:
        k, v = opt.split("=")
        run = run_fio(job(["precreate"], tmpfs, datasets=1, precreate_per_set=1, **{k: v}), tmp_path,
                      check=False)
        lines = run.mdfio_lines()
        assert run.rc != 0 and len(lines) == 1 and want in lines[0], run.stderr
        assert os.listdir(tmpfs) == []


# ------------------------------------------------------- the real program

N, D, P, S, SEED = MDW_RANKS, 2, 4, 5000, 1234


def mdw_args(root, packet, seed, *phase):
    return ["-o", str(root), "-D", str(D), "-P", str(P), "-I", str(P), "-R", "1", "-S", str(S),
            f"-G={seed}", f"--dataPacketType={packet}", *phase]


def benchmark_line(out):
    """(objects read, errors) of md-workbench's benchmark line."""
    m = re.search(r"^benchmark process .* objects:(\d+) .*\((\d+) errs", out, re.M)
    assert m, out
    return int(m.group(1)), int(m.group(2))


@pytest.mark.parametrize("packet", ["t", "o", "i", "r"])
def test_md_workbench_verifies_what_mdfio_wrote(md_workbench, tmpfs, tmp_path, packet):
    """mdfio precreates; md-workbench's benchmark (-2 -X) reads every object
    and finds no error; with another seed (read-only) every read fails."""
    run_fio(job(["precreate"], tmpfs, **options(N, D, P, S, SEED, packet)), tmp_path, check=True)
    info = tmp_path / "md-workbench.status"      # md-workbench's run-info file: where -2 starts
    info.write_text("pos: 0\n")
    wrong = md_workbench(mdw_args(tmpfs, packet, SEED + 1, "-2", "-X", "--read-only",
                                  f"--run-info-file={info}"), tmp_path)
    assert benchmark_line(wrong) == (0, N * D * P), wrong
    out = md_workbench(mdw_args(tmpfs, packet, SEED, "-2", "-X", f"--run-info-file={info}"), tmp_path)
    assert benchmark_line(out) == (N * D * P, 0), out


@pytest.mark.parametrize("packet", ["t", "o", "i", "r"])
def test_mdfio_verifies_what_md_workbench_wrote(md_workbench, tmpfs, tmp_path, packet):
    """md-workbench precreates one namespace, mdfio another with the same
    parameters: every object is the same. mdfio's benchmark (verify_read=1)
    then reads md-workbench's objects, put in place of its own: no error;
    with another seed (read-only) every read fails."""
    theirs, ours = tmpfs / "mdw", tmpfs / "mdfio"
    ours.mkdir()
    md_workbench(mdw_args(theirs, packet, SEED, "-1", f"--run-info-file={tmp_path / 'info'}"), tmp_path)
    opts = options(N, D, P, S, SEED, packet, steps_per_set=P, verify_read=1)
    run_fio(job(["precreate"], ours, **opts), tmp_path, check=True)
    assert objects(ours) == objects(theirs)
    assert len(objects(ours)) == N * D * P
    for name in objects(theirs):
        shutil.copyfile(theirs / name, ours / name)
    run = run_fio(job(["benchmark"], ours, read_only=1, **{**opts, "random_seed": SEED + 1}), tmp_path,
                  check=False)
    assert run.rc != 0 and read_errors(run) == N * D * P, run.stderr
    run = run_fio(job(["benchmark"], ours, **opts), tmp_path, check=True)
    assert (reads(run), read_errors(run)) == (N * D * P, 0)
