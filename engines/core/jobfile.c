/* The checks of the jobfile as a whole, in fio's main process before any
 * job starts: every benchmark repeat a root's sections ask for has its
 * section. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fio_compat.h"
#include "job.h"

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
