"""mdfio-s3's claim of a namespace and what it relies on
(engines/lib/s3claim.c), against versitygw (tools/mdfio/versitygw.py):
only what mdfio made holds the claim."""
from conftest import after_cleanup, run_fio
from test_s3 import BUCKET, CLAIM, FOREIGN, s3_job, serving


def test_a_key_named_like_a_dataset_never_holds_the_claim(tmpfs, tmp_path):
    """Someone's keys 7_9/x and 5_1/x beside a namespace without a prefix:
    neither is a dataset of it (7_9 is past datasets=, 5_1 holds no
    marker), so the cleanup that removes the namespace's last dataset
    deletes the claim, and a run from another directory= may then use the
    bucket; the planted keys stay."""
    theirs = ["5_1/x", "7_9/x"]
    opts = dict(datasets=2, precreate_per_set=3)
    with serving() as s3:
        for key in theirs:
            s3.put(BUCKET, key, b"theirs")
        env = s3.env()
        first, second = tmpfs / "first", tmpfs / "second"
        first.mkdir()
        second.mkdir()
        run_fio(s3_job(["precreate"], first, **opts), tmp_path, env=env, check=True)
        assert CLAIM in s3.keys(BUCKET)
        run_fio(s3_job(["cleanup"], first, **opts), tmp_path, env=env, check=True)
        assert s3.keys(BUCKET) == sorted([FOREIGN] + theirs)
        run_fio(s3_job(["precreate", "cleanup"], second, **opts), tmp_path, env=env, check=True)
        assert s3.keys(BUCKET) == sorted([FOREIGN] + theirs)
        assert after_cleanup(first) == [] and after_cleanup(second) == []
