/* Rank base, total and ranks on this host from hosts= and from the
 * launchers' variables. */
#include <string.h>

#include "check.h"
#include "world.h"

static const char *const *env;	/* name, value, name, value, ..., NULL */

static const char *fake_getenv(const char *name)
{
	const char *const *e;

	for (e = env; e && *e; e += 2)
		if (!strcmp(*e, name))
			return e[1];
	return NULL;
}

static int find(struct mdfio_world *w, uint32_t numjobs, const char *hosts,
		const char *host, const char *const *vars, char *msg)
{
	env = vars;
	memset(w, 0xa5, sizeof(*w));
	return mdfio_world_find(w, numjobs, hosts, host, fake_getenv, msg, 256);
}

int main(void)
{
	static const char *const ompi[] = { "OMPI_COMM_WORLD_RANK", "3",
		"OMPI_COMM_WORLD_SIZE", "4", "SLURM_PROCID", "0", "SLURM_NTASKS", "1", NULL };
	static const char *const slurm[] = { "SLURM_PROCID", "5", "SLURM_NTASKS", "6",
		"SLURM_STEP_ID", "0", "SLURM_STEP_NUM_TASKS", "6", NULL };
	static const char *const pmi[] = { "PMI_RANK", "1", "PMI_SIZE", "2", NULL };
	static const char *const no_size[] = { "PMI_RANK", "1", NULL };
	static const char *const past[] = { "OMPI_COMM_WORLD_RANK", "4", "OMPI_COMM_WORLD_SIZE", "4", NULL };
	static const char *const junk[] = { "SLURM_PROCID", "1x", "SLURM_STEP_NUM_TASKS", "4", NULL };
	/* what Slurm 22.05 gives a batch script of sbatch -n 4, an interactive
	 * step of salloc -n 4 (LaunchParameters=use_interactive_step), and
	 * srun -E -n 2 in that allocation (its SLURM_NTASKS preserved) */
	static const char *const batch[] = { "SLURM_PROCID", "0", "SLURM_NTASKS", "4",
		"SLURM_NODEID", "0", "SLURM_TASKS_PER_NODE", "4", NULL };
	static const char *const interactive[] = { "SLURM_PROCID", "0", "SLURM_NTASKS", "4",
		"SLURM_STEP_ID", "4294967290", "SLURM_STEP_NUM_TASKS", "1", "SLURM_NODEID", "0",
		"SLURM_STEP_TASKS_PER_NODE", "1", NULL };
	static const char *const preserved[] = { "SLURM_PROCID", "1", "SLURM_NTASKS", "4",
		"SLURM_STEP_ID", "1", "SLURM_STEP_NUM_TASKS", "2", "SLURM_NODEID", "0",
		"SLURM_STEP_TASKS_PER_NODE", "2", NULL };
	static const char *const pmi_preserved[] = { "PMI_RANK", "1", "PMI_SIZE", "2",
		"SLURM_PROCID", "1", "SLURM_NTASKS", "4", "SLURM_STEP_NUM_TASKS", "2",
		"SLURM_NODEID", "0", "SLURM_STEP_TASKS_PER_NODE", "2", NULL };
	static const char *const step_junk[] = { "SLURM_PROCID", "0", "SLURM_STEP_NUM_TASKS", "four", NULL };
	static const char *const ompi_local[] = { "OMPI_COMM_WORLD_RANK", "3",
		"OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_SIZE", "3",
		"SLURM_PROCID", "0", "SLURM_NTASKS", "1", "SLURM_NODEID", "0",
		"SLURM_STEP_TASKS_PER_NODE", "1", NULL };
	static const char *const ompi_big[] = { "OMPI_COMM_WORLD_RANK", "0",
		"OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_LOCAL_SIZE", "3", NULL };
	static const char *const hydra[] = { "PMI_RANK", "1", "PMI_SIZE", "2",
		"MPI_LOCALNRANKS", "2", NULL };
	static const char *const slurm_list[] = { "SLURM_PROCID", "6", "SLURM_STEP_NUM_TASKS", "9",
		"SLURM_NODEID", "3", "SLURM_STEP_TASKS_PER_NODE", "2(x3),3", NULL };
	static const char *const slurm_first[] = { "SLURM_PROCID", "4", "SLURM_STEP_NUM_TASKS", "9",
		"SLURM_NODEID", "2", "SLURM_STEP_TASKS_PER_NODE", "2(x3),3", NULL };
	static const char *const slurm_bad[] = { "SLURM_PROCID", "1", "SLURM_STEP_NUM_TASKS", "4",
		"SLURM_NODEID", "4", "SLURM_STEP_TASKS_PER_NODE", "2(x2)", NULL };
	static const char *const slurm_junk[] = { "SLURM_PROCID", "1", "SLURM_STEP_NUM_TASKS", "4",
		"SLURM_NODEID", "1", "SLURM_STEP_TASKS_PER_NODE", "2(x2", NULL };
	static const char *const slurm_tail[] = { "SLURM_PROCID", "0", "SLURM_STEP_NUM_TASKS", "4",
		"SLURM_NODEID", "0", "SLURM_STEP_TASKS_PER_NODE", "2(x2)junk", NULL };
	static const char *const slurm_zero[] = { "SLURM_PROCID", "0", "SLURM_STEP_NUM_TASKS", "4",
		"SLURM_NODEID", "0", "SLURM_STEP_TASKS_PER_NODE", "2(x0),4", NULL };
	static const char *const pmi_srun[] = { "PMI_RANK", "5", "PMI_SIZE", "6",
		"SLURM_PROCID", "5", "SLURM_STEP_NUM_TASKS", "6", "SLURM_NODEID", "1",
		"SLURM_STEP_TASKS_PER_NODE", "3(x2)", NULL };
	static const char *const pmi_other[] = { "PMI_RANK", "1", "PMI_SIZE", "2",
		"SLURM_PROCID", "0", "SLURM_STEP_NUM_TASKS", "1", "SLURM_NODEID", "0",
		"SLURM_STEP_TASKS_PER_NODE", "1", NULL };
	struct mdfio_world w;
	char msg[256];

	CHECK(!find(&w, 3, NULL, "n1", NULL, msg) && w.base == 0 && w.total == 3,
	      "one fio job: %u %u", w.base, w.total);
	CHECK(!find(&w, 3, "", "n1", NULL, msg) && w.total == 3, "empty hosts= is unset");

	/* hosts=: position times numjobs, total over the list */
	CHECK(!find(&w, 2, "n1,n2,n3", "n2", NULL, msg) && w.base == 2 && w.total == 6,
	      "n2 of 3: %u %u (%s)", w.base, w.total, msg);
	CHECK(!find(&w, 2, "n1,n2,n3", "n3.cluster.example", NULL, msg) && w.base == 4,
	      "qualified host name against a short entry: %s", msg);
	CHECK(!find(&w, 1, "n1.cluster,n2.cluster", "n2", NULL, msg) && w.base == 1,
	      "short host name against qualified entries: %s", msg);
	CHECK(find(&w, 1, "n1.a,n2.a", "n2.b", NULL, msg), "two qualified names differ");
	CHECK(find(&w, 1, "n1,n2", "n4", NULL, msg) && strstr(msg, "(n4) is not listed"),
	      "an unlisted host: %s", msg);
	CHECK(find(&w, 1, "n1,n2,n1", "n2", NULL, msg) && strstr(msg, "n1 is listed twice"),
	      "a host listed twice: %s", msg);
	CHECK(find(&w, 1, "n1,,n2", "n1", NULL, msg) && strstr(msg, "empty host name"),
	      "an empty entry: %s", msg);
	CHECK(find(&w, 1, "n1,n1.x", "n1", NULL, msg) && strstr(msg, "matches two entries"),
	      "two entries naming one host: %s", msg);
	CHECK(find(&w, 1u << 20, "a,b", "a", NULL, msg) && strstr(msg, "more than"),
	      "too many ranks: %s", msg);

	/* launchers: the innermost wins */
	CHECK(!find(&w, 2, NULL, "n1", ompi, msg) && w.base == 6 && w.total == 8 &&
	      !strcmp(w.source, "OMPI_COMM_WORLD_RANK"), "mpirun inside srun: %u %u", w.base, w.total);
	CHECK(!find(&w, 1, NULL, "n1", slurm, msg) && w.base == 5 && w.total == 6, "srun");
	CHECK(!find(&w, 4, NULL, "n1", pmi, msg) && w.base == 4 && w.total == 8, "PMI");
	CHECK(find(&w, 1, NULL, "n1", no_size, msg) && strstr(msg, "PMI_SIZE=(unset)"),
	      "a rank without a size: %s", msg);
	CHECK(find(&w, 1, NULL, "n1", past, msg) && strstr(msg, "is not below"), "rank >= size: %s", msg);
	CHECK(find(&w, 1, NULL, "n1", junk, msg) && strstr(msg, "SLURM_PROCID=1x"), "junk: %s", msg);
	CHECK(find(&w, 1, "n1", "n1", slurm, msg) && strstr(msg, "both number the ranks"),
	      "hosts= under a launcher: %s", msg);

	/* Slurm's processes that are no task of an srun step: one fio */
	CHECK(!find(&w, 2, NULL, "n1", batch, msg) && w.base == 0 && w.total == 2 && w.local == 2 &&
	      !strcmp(w.source, "this fio job"), "a batch script: %u %u %u (%s)", w.base, w.total, w.local, msg);
	CHECK(!find(&w, 2, "n1,n2", "n2", batch, msg) && w.base == 2 && w.total == 4,
	      "hosts= in a batch script: %s", msg);
	CHECK(!find(&w, 2, NULL, "n1", interactive, msg) && w.base == 0 && w.total == 2 && w.local == 2,
	      "an interactive step: %u %u %u (%s)", w.base, w.total, w.local, msg);
	CHECK(!find(&w, 1, NULL, "n1", preserved, msg) && w.base == 1 && w.total == 2 && w.local == 2,
	      "srun -E: the step's size: %u %u %u (%s)", w.base, w.total, w.local, msg);
	CHECK(!find(&w, 1, NULL, "n1", pmi_preserved, msg) && w.base == 1 && w.total == 2 && w.local == 2,
	      "srun -E --mpi=pmi2: the step's list: %u %u %u (%s)", w.base, w.total, w.local, msg);
	CHECK(find(&w, 1, NULL, "n1", step_junk, msg) &&
	      strstr(msg, "SLURM_PROCID is set but SLURM_STEP_NUM_TASKS=four is not a number of processes"),
	      "a step's size that is no number: %s", msg);

	/* ranks on this host: numjobs times the launcher's processes here */
	CHECK(!find(&w, 3, NULL, "n1", NULL, msg) && w.local == 3, "one fio job: %u", w.local);
	CHECK(!find(&w, 2, "n1,n2,n3", "n2", NULL, msg) && w.local == 2, "hosts=: %u", w.local);
	CHECK(!find(&w, 2, NULL, "n1", ompi, msg) && w.local == 2,
	      "Open MPI without its local size: %u", w.local);
	CHECK(!find(&w, 2, NULL, "n1", ompi_local, msg) && w.local == 6,
	      "OMPI_COMM_WORLD_LOCAL_SIZE=3 (not Slurm's list): %u", w.local);
	CHECK(!find(&w, 1, NULL, "n1", hydra, msg) && w.local == 2, "MPI_LOCALNRANKS: %u", w.local);
	CHECK(!find(&w, 1, NULL, "n1", slurm_list, msg) && w.local == 3,
	      "node 3 of 2(x3),3: %u", w.local);
	CHECK(!find(&w, 2, NULL, "n1", slurm_first, msg) && w.local == 4,
	      "node 2 of 2(x3),3, numjobs=2: %u", w.local);
	CHECK(!find(&w, 1, NULL, "n1", slurm, msg) && w.local == 1, "srun without its list: %u", w.local);
	CHECK(!find(&w, 1, NULL, "n1", slurm_bad, msg) && w.local == 1,
	      "a list this node is past: %u", w.local);
	CHECK(!find(&w, 1, NULL, "n1", slurm_junk, msg) && w.local == 1, "a malformed list: %u", w.local);
	CHECK(!find(&w, 1, NULL, "n1", slurm_tail, msg) && w.local == 1,
	      "junk after this node's entry: %u", w.local);
	CHECK(!find(&w, 1, NULL, "n1", slurm_zero, msg) && w.local == 1, "(x0): %u", w.local);
	CHECK(!find(&w, 1, NULL, "n1", pmi_srun, msg) && w.local == 3,
	      "srun's PMI without MPI_LOCALNRANKS: its list: %u", w.local);
	CHECK(!find(&w, 1, NULL, "n1", pmi_other, msg) && w.local == 1,
	      "an mpiexec inside an srun of another size: %u", w.local);
	CHECK(!find(&w, 1, NULL, "n1", ompi_big, msg) && w.local == 1,
	      "more here than in the world: %u", w.local);
	return check_result();
}
