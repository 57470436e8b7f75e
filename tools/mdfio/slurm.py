"""A single-node Slurm cluster of its own, for tests and benchmarks of runs
under srun and sbatch: munged, slurmctld and slurmd from Debian's packages,
with their key, socket, configuration, state, spool and logs in one
directory and ports of their own, so that it meets no other cluster and no
other run's. Every daemon listens on 127.0.0.1 only. Starting is bounded in
time, and cluster() kills every process of the cluster (daemons, steps and
the tasks they started) on every exit path."""
from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Container, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .fio import descendants, processes

START_TIMEOUT = 30  # s until the node takes jobs
START_TRIES = 5     # port sets tried: another program may take a free one first
KILL_TIMEOUT = 10   # s for a killed process to go (one blocked in a file system takes a while)
# Ports below Linux's ephemeral range (32768 on), which bind(port 0) and
# outgoing connections take from: a port chosen here stays free more often
# between the check and the daemon's bind
PORT_LOW, PORT_HIGH = 20000, 32000
SRUN_PORTS = 40     # srun listens on a few ports per step
# a job's states once it has ended (scontrol's JobState)
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE",
         "PREEMPTED"}


def need_slurm() -> str | None:
    """Why a Slurm cluster cannot be started here, or None."""
    if os.geteuid() != 0:
        return "a Slurm cluster of its own needs root (slurmd starts jobs as their user)"
    missing = [d for d in ("munged", "slurmctld", "slurmd", "srun", "sbatch", "sinfo", "scancel")
               if not shutil.which(d)]
    if missing:
        return f"{', '.join(missing)} not installed (./setup installs slurm-wlm and munge)"
    return None


@dataclass
class SlurmCluster:
    directory: Path
    node: str           # the node's (and controller's) name: this host's short name
    conf: Path = None
    daemons: dict = field(default_factory=dict, repr=False)    # name: Popen
    _socket_dir: Path = field(default=None, repr=False)

    @property
    def env(self) -> dict[str, str]:
        """What srun, sbatch and the other clients need to reach this
        cluster, to add to an environment."""
        return {"SLURM_CONF": str(self.conf)}

    def client_env(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        """env (default: this process's) for a Slurm client of this cluster:
        its SLURM_CONF, and none of another allocation's or step's
        variables, which srun and sbatch would take as their own."""
        env = dict(os.environ if env is None else env)
        for k in list(env):
            if k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_")):
                del env[k]
        env.update(self.env)
        return env

    def run(self, args: Sequence[str], timeout: float = 30, check: bool = True) -> subprocess.CompletedProcess[str]:
        """A Slurm client command (scontrol, squeue, ...) on this cluster."""
        proc = subprocess.run(args, capture_output=True, text=True, env=self.client_env(), timeout=timeout,
                              stdin=subprocess.DEVNULL)
        if check and proc.returncode:
            raise RuntimeError(f"{' '.join(args)}: exit {proc.returncode}: {proc.stderr.strip()}")
        return proc

    def log(self, name: str) -> str:
        path = self.directory / "log" / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def jobs(self) -> list[str]:
        """The ids of the jobs the controller still knows as not ended."""
        out = self.run(["squeue", "-h", "-o", "%i"]).stdout
        return out.split()

    def cancel_all(self, timeout: float = 20) -> list[str]:
        """Cancels every job and waits until none is left; then kills
        whatever of them still runs (a step whose srun was killed, tasks
        that ignored SIGTERM). Returns the job ids there were."""
        try:
            jobs = self.jobs()
            if jobs:
                self.run(["scancel", *jobs], check=False)
                deadline = time.monotonic() + timeout
                while self.jobs() and time.monotonic() < deadline:
                    time.sleep(0.1)
        except (RuntimeError, subprocess.TimeoutExpired):
            jobs = ["?"]    # no controller to ask: its jobs' processes go all the same
        table = processes()
        spare = {p for d in self.daemons.values() for p in descendants(d.pid, table)
                 if table.get(p, ("",))[0] != "slurmstepd"}
        kill_processes(self.conf, spare)
        return jobs

    def batch(self, args: Sequence[str], env: Mapping[str, str] | None = None,
              cwd: str | os.PathLike[str] | None = None, timeout: float = 120) -> int:
        """sbatch args (options and the script) in env (default:
        client_env()), waiting for the job to end: its exit status (128 +
        the signal that ended it). sbatch --wait polls at intervals that
        grow to 10 s, so the controller is asked here instead. A job still
        running after timeout seconds is cancelled, and TimeoutError
        raised."""
        proc = subprocess.run(["sbatch", "--parsable", *args], capture_output=True, text=True,
                              env=self.client_env() if env is None else env, cwd=cwd, timeout=30,
                              stdin=subprocess.DEVNULL)
        if proc.returncode:
            raise RuntimeError(f"sbatch {' '.join(args)}: exit {proc.returncode}: {proc.stderr.strip()}")
        job = proc.stdout.strip().split(";")[0]
        deadline = time.monotonic() + timeout
        while True:
            fields = dict(w.split("=", 1) for w in self.run(["scontrol", "-o", "show", "job", job]).stdout.split()
                          if "=" in w)
            if fields.get("JobState") in ENDED:
                code, sig = (int(v) for v in fields["ExitCode"].split(":"))
                return 128 + sig if sig else code
            if time.monotonic() > deadline:
                self.run(["scancel", job], check=False)
                raise TimeoutError(f"batch job {job} ran longer than {timeout} s")
            time.sleep(0.05)

    def idle(self) -> bool:
        proc = self.run(["sinfo", "-h", "-n", self.node, "-o", "%T"], timeout=10, check=False)
        return proc.returncode == 0 and proc.stdout.strip() == "idle"

    def start(self, timeout: float = START_TIMEOUT) -> None:
        """Starts munged, then slurmctld and slurmd on ports free at the
        time, and waits until the node is idle."""
        key = self.directory / "munge.key"
        if not key.exists():
            # as dd makes one from /dev/urandom; munged reads it only if
            # no one else may
            fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(os.urandom(1024))
        for d in ("state", "spool", "log", "run"):
            (self.directory / d).mkdir(exist_ok=True)
        for _ in range(START_TRIES):
            self._write_conf(*_free_ports())
            env = self.client_env()
            self.daemons["munged"] = self._daemon(
                "munged", ["munged", "-F", f"--key-file={key}", f"--socket={self.socket}",
                           f"--pid-file={self.directory / 'run' / 'munged.pid'}",
                           f"--seed-file={self.directory / 'run' / 'munged.seed'}"], env)
            self.daemons["slurmctld"] = self._daemon("slurmctld", ["slurmctld", "-D", "-c", "-f", str(self.conf)], env)
            self.daemons["slurmd"] = self._daemon("slurmd", ["slurmd", "-D", "-N", self.node, "-f", str(self.conf)],
                                                  env)
            deadline = time.monotonic() + timeout
            while not self.idle():
                dead = [n for n, p in self.daemons.items() if p.poll() is not None]
                if dead or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            else:
                return
            logs = "\n".join(f"--- {n}:\n{self.log(n)[-2000:]}" for n in self.daemons)
            self.stop()
            if not dead:
                raise TimeoutError(f"the Slurm node {self.node} was not idle within {timeout} s\n{logs}")
            if "Address already in use" not in logs:
                raise RuntimeError(f"Slurm did not start: {', '.join(dead)} exited\n{logs}")
        raise RuntimeError(f"Slurm did not start: its ports were taken {START_TRIES} times")

    @property
    def socket(self) -> Path:
        if self._socket_dir is None:
            # munged wants every directory above its socket searchable by
            # all, which a test's own temporary directory is not
            self._socket_dir = Path(tempfile.mkdtemp(prefix="mdfio-munge-"))
            self._socket_dir.chmod(0o755)
        return self._socket_dir / "munge.socket"

    def _daemon(self, name, cmd, env):
        with open(self.directory / "log" / f"{name}.log", "a") as out:
            return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                    start_new_session=True)

    def _write_conf(self, ctld_port, slurmd_port, srun_low):
        d = self.directory
        self.conf = d / "slurm.conf"
        # the node as slurmd -C finds it, so that slurmd never drains it
        # for a count of CPUs the host does not have
        found = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, timeout=30).stdout.split()
        hw = {k: v for k, v in (w.split("=", 1) for w in found if "=" in w)}
        cpus = [f"{k}={hw[k]}" for k in ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore")
                if k in hw]
        self.conf.write_text("\n".join([
            "ClusterName=mdfio",
            f"SlurmctldHost={self.node}(127.0.0.1)",
            f"SlurmctldPort={ctld_port}",
            f"SlurmdPort={slurmd_port}",
            f"SrunPortRange={srun_low}-{srun_low + SRUN_PORTS - 1}",
            # bind to the node's address, 127.0.0.1, never to every address
            "CommunicationParameters=NoInAddrAny,NoCtldInAddrAny",
            "AuthType=auth/munge",
            f"AuthInfo=socket={self.socket}",
            "CredType=cred/munge",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={d / 'state'}",
            f"SlurmdSpoolDir={d / 'spool'}",
            f"SlurmctldPidFile={d / 'run' / 'slurmctld.pid'}",
            f"SlurmdPidFile={d / 'run' / 'slurmd.pid'}",
            f"SlurmctldLogFile={d / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={d / 'log' / 'slurmd.log'}",
            "MailProg=/bin/true",
            # no cgroups: tasks are plain processes of slurmstepd
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "MpiDefault=none",
            "ReturnToService=2",
            # a cancelled task gets SIGKILL soon after SIGTERM: a test's
            # clean-up waits for it
            "KillWait=2",
            f"NodeName={self.node} NodeAddr=127.0.0.1 {' '.join(cpus)} State=UNKNOWN",
            # more tasks than CPUs (srun --overcommit), as on a login node
            f"PartitionName=mdfio Nodes={self.node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4",
        ]) + "\n")

    def stop(self) -> None:
        """Kills every process of the cluster: its jobs' too."""
        try:
            if self.conf is not None:
                kill_processes(self.conf)
        finally:
            for p in self.daemons.values():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(timeout=10)
            self.daemons.clear()
            if self._socket_dir is not None:
                shutil.rmtree(self._socket_dir, ignore_errors=True)
                self._socket_dir = None


def _port_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_ports():
    """Two ports and a range of SRUN_PORTS, all free at the time."""
    while True:
        low = random.randrange(PORT_LOW, PORT_HIGH - SRUN_PORTS - 2)
        if all(_port_free(p) for p in range(low, low + SRUN_PORTS + 2)):
            return low, low + 1, low + 2


def _environ(pid):
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return []


def kill_processes(conf: str | os.PathLike[str], spare: Container[int] = ()) -> None:
    """Kills every process that runs with SLURM_CONF=conf in its
    environment but those in spare and this one's ancestors: the daemons of
    the cluster, which hand it down to every step and task they start (also
    those whose srun was killed, which slurmd no longer reaches), and the
    clients started for it. Repeated until none is left, as a dying
    slurmstepd may still fork."""
    mark = f"SLURM_CONF={conf}".encode()
    table, mine, p = processes(), set(), os.getpid()
    while p > 1 and p not in mine:
        mine.add(p)
        p = table[p][2] if p in table else 0
    deadline = time.monotonic() + KILL_TIMEOUT
    while True:
        found = [int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit()
                 and int(e.name) not in mine and int(e.name) not in spare and mark in _environ(e.name)]
        if not found:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"processes {found} of the Slurm cluster of {conf} survive SIGKILL")
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


@contextlib.contextmanager
def cluster(directory: str | os.PathLike[str], node: str | None = None) -> Iterator[SlurmCluster]:
    """A started single-node cluster in directory (made if missing): a
    SlurmCluster, stopped with all its processes on leaving."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    c = SlurmCluster(directory, node or socket.gethostname().split(".")[0])
    try:
        c.start()
        yield c
    finally:
        c.stop()
