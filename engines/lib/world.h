/* Where a fio job's ranks stand among all ranks of one md-workbench run: the
 * global rank of its first clone and the total N, when the run spans several
 * fio processes (mpirun, srun) or hosts (fio --server/--client). Pure: the
 * environment and the host name are passed in. */
#ifndef MDFIO_WORLD_H
#define MDFIO_WORLD_H

#include <stddef.h>
#include <stdint.h>

/* Global ranks are 32-bit; the bound keeps rank files and status small. */
#define MDFIO_MAX_RANKS (1u << 20)

struct mdfio_world {
	uint32_t base;		/* global rank of clone 0 */
	uint32_t total;		/* N over every process and host */
	/* ranks on this host: numjobs times the processes the launcher says
	 * it started here (one where it does not say) */
	uint32_t local;
	/* what told us: "this fio job", "hosts=", or the launcher's rank
	 * variable ("OMPI_COMM_WORLD_RANK", ...) */
	const char *source;
	/* the launcher's rank variable, if a launcher numbered the ranks
	 * (NULL: hosts= or this fio job) */
	const char *launcher;
};

/* Decides the world of a job with numjobs clones on host, from hosts (the
 * engine option: host names separated by ',', or NULL/"" when unset) and
 * the launcher variables getenv finds. Returns 0, or 1 with one line in
 * msg naming the option, the variables or the hosts at fault. */
int mdfio_world_find(struct mdfio_world *w, uint32_t numjobs,
		     const char *hosts, const char *host,
		     const char *(*getenv_fn)(const char *name),
		     char *msg, size_t msglen);

/* The i-th host of a hosts= list: its start, and its length in *len; NULL
 * past the end. */
const char *mdfio_world_host(const char *hosts, uint32_t i, size_t *len);

#endif
