#include "world.h"
#include "reason.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rank and size each launcher exports to every process it starts,
 * innermost first: mpirun inside a Slurm allocation sees both; and how it
 * says how many of them run on this host (NULL: Slurm's own list).
 * With step_only, a process with the rank but not the size is none of the
 * launcher's: Slurm gives a batch script (one process, sbatch's) its
 * SLURM_PROCID=0 beside the allocation's SLURM_NTASKS, and keeps that
 * SLURM_NTASKS in steps started with srun -E or as salloc's interactive
 * shell; only the size of srun's step, which a batch script lacks, counts
 * the processes started together. */
static const struct launcher {
	const char *rank, *size, *local_size;
	int step_only;
} launchers[] = {
	{ "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", 0 },	/* Open MPI */
	{ "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS", 0 },	/* MPICH, Intel MPI (Hydra) */
	{ "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", NULL, 1 },	/* srun */
};

static int parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return 1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return 1;
	*out = (uint32_t)v;
	return 0;
}

/* The tasks srun started on this node: entry SLURM_NODEID of
 * SLURM_STEP_TASKS_PER_NODE, a list such as "2(x3),1" (three nodes with 2
 * tasks, then one with 1). 0 where either is missing, or the list is
 * malformed anywhere or too short. */
static uint32_t slurm_tasks_here(const char *(*getenv_fn)(const char *name))
{
	const char *s = getenv_fn("SLURM_STEP_TASKS_PER_NODE");
	uint32_t node, here = 0;
	int found = 0;

	if (!s || !*s || parse_u32(getenv_fn("SLURM_NODEID"), &node))
		return 0;
	for (;;) {
		char *end;
		unsigned long tasks, nodes = 1;

		if (*s < '0' || *s > '9')
			return 0;
		tasks = strtoul(s, &end, 10);
		s = end;
		if (!strncmp(s, "(x", 2)) {
			if (s[2] < '1' || s[2] > '9')
				return 0;
			nodes = strtoul(s + 2, &end, 10);
			if (*end != ')')
				return 0;
			s = end + 1;
		}
		if (tasks > UINT32_MAX)
			return 0;
		if (!found && node < nodes) {
			found = 1;
			here = (uint32_t)tasks;
		} else if (!found) {
			node -= (uint32_t)nodes;
		}
		if (!*s)
			return here;
		if (*s++ != ',')
			return 0;
	}
}

/* The processes launcher l started on this host, or 0 if it does not say.
 * srun's PMI plugins start processes with PMI_RANK and PMI_SIZE but no
 * count of their own: srun's list says it when its step is that world. */
static uint32_t processes_here(const struct launcher *l, uint32_t size,
			       const char *(*getenv_fn)(const char *name))
{
	uint32_t n;

	if (l->local_size && !parse_u32(getenv_fn(l->local_size), &n))
		return n;
	if (l->local_size && (parse_u32(getenv_fn("SLURM_STEP_NUM_TASKS"), &n) || n != size))
		return 0;
	return slurm_tasks_here(getenv_fn);
}

/* The length of a host name up to its first '.': "n1.cluster" is "n1". */
static size_t short_len(const char *name, size_t len)
{
	const char *dot = memchr(name, '.', len);

	return dot ? (size_t)(dot - name) : len;
}

/* Whether list entry e[0..len) names host: the same name, or the same short
 * name where one of them is qualified and the other not. */
static int names_host(const char *e, size_t len, const char *host)
{
	size_t hlen = strlen(host);

	if (len == hlen && !memcmp(e, host, len))
		return 1;
	if (memchr(e, '.', len) && memchr(host, '.', hlen))
		return 0;
	return short_len(e, len) == short_len(host, hlen) &&
	       !memcmp(e, host, short_len(e, len));
}

const char *mdfio_world_host(const char *hosts, uint32_t i, size_t *len)
{
	const char *e = hosts;

	for (; *e; i--) {
		*len = strcspn(e, ",");
		if (!i)
			return e;
		e += *len + (e[*len] ? 1 : 0);
	}
	return NULL;
}

static int from_hosts(struct mdfio_world *w, uint32_t numjobs,
		      const char *hosts, const char *host, char *msg,
		      size_t msglen)
{
	const char *e, *f, *next;
	uint32_t i = 0, mine = 0, count = 0;
	int found = 0;

	for (e = hosts; *e; e = next) {
		size_t len = strcspn(e, ",");

		next = e[len] ? e + len + 1 : e + len;
		if (!len)
			return mdfio_reason(msg, msglen, "hosts=%s: an empty host name", hosts);
		for (f = hosts; f < e; f += strcspn(f, ",") + 1) {
			if (strcspn(f, ",") == len && !memcmp(f, e, len))
				return mdfio_reason(msg, msglen, "hosts=%s: host %.*s is listed twice; each host takes numjobs ranks of its own",
					    hosts, (int)len, e);
		}
		if (names_host(e, len, host)) {
			if (found)
				return mdfio_reason(msg, msglen, "hosts=%s: this host (%s) matches two entries", hosts, host);
			found = 1;
			mine = i;
		}
		i++;
	}
	count = i;
	if (!count)
		return mdfio_reason(msg, msglen, "hosts=: expected host names separated by ','");
	if (!found)
		return mdfio_reason(msg, msglen, "hosts=%s: this host (%s) is not listed, so it would take no ranks",
			    hosts, host);
	if ((uint64_t)count * numjobs > MDFIO_MAX_RANKS)
		return mdfio_reason(msg, msglen, "hosts=%s with numjobs=%" PRIu32 ": more than %u ranks",
			    hosts, numjobs, MDFIO_MAX_RANKS);
	w->base = mine * numjobs;
	w->total = count * numjobs;
	w->local = numjobs;
	w->source = "hosts=";
	w->launcher = NULL;
	return 0;
}

int mdfio_world_find(struct mdfio_world *w, uint32_t numjobs,
		     const char *hosts, const char *host,
		     const char *(*getenv_fn)(const char *name),
		     char *msg, size_t msglen)
{
	const struct launcher *l = NULL;
	uint32_t rank, size, here;
	size_t i;

	for (i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
		if (getenv_fn(launchers[i].rank) &&
		    (!launchers[i].step_only || getenv_fn(launchers[i].size))) {
			l = &launchers[i];
			break;
		}
	}
	if (hosts && *hosts) {
		if (l)
			return mdfio_reason(msg, msglen, "hosts=%s and the launcher's %s both number the ranks: remove hosts= when starting fio with mpirun or srun",
				    hosts, l->rank);
		return from_hosts(w, numjobs, hosts, host, msg, msglen);
	}
	if (!l) {
		w->base = 0;
		w->total = numjobs;
		w->local = numjobs;
		w->source = "this fio job";
		w->launcher = NULL;
		return 0;
	}
	if (parse_u32(getenv_fn(l->rank), &rank))
		return mdfio_reason(msg, msglen, "%s=%s: expected a rank number", l->rank,
			    getenv_fn(l->rank));
	if (parse_u32(getenv_fn(l->size), &size) || !size)
		return mdfio_reason(msg, msglen, "%s is set but %s=%s is not a number of processes",
			    l->rank, l->size, getenv_fn(l->size) ? getenv_fn(l->size) : "(unset)");
	if (rank >= size)
		return mdfio_reason(msg, msglen, "%s=%" PRIu32 " is not below %s=%" PRIu32,
			    l->rank, rank, l->size, size);
	if ((uint64_t)size * numjobs > MDFIO_MAX_RANKS)
		return mdfio_reason(msg, msglen, "%s=%" PRIu32 " with numjobs=%" PRIu32 ": more than %u ranks",
			    l->size, size, numjobs, MDFIO_MAX_RANKS);
	w->base = rank * numjobs;
	w->total = size * numjobs;
	here = processes_here(l, size, getenv_fn);
	w->local = (here && here <= size ? here : 1) * numjobs;
	w->source = w->launcher = l->rank;
	return 0;
}
