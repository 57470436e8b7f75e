/* The launcher's own collective as the barrier's wake-up: under mpirun or
 * srun --mpi=pmix, fio's main process is a PMIx client of the launcher,
 * and the ranks of each fio process, once all have arrived at a barrier,
 * have it enter PMIx_Fence with every other fio process of the run. The
 * ranks then look at the rank file once, when the fence completes, instead
 * of polling it while they wait (docs/hosts.md, "The barrier"). The rank
 * file stays what decides: the fence only says when to look. */
#ifndef MDFIO_LAUNCHER_H
#define MDFIO_LAUNCHER_H

#include "rankfile.h"

/* In fio's main process, before it starts any job: the fence of the
 * launcher that started this fio, connecting to it on the first call; NULL
 * when no launcher serves PMIx (no PMIX_NAMESPACE in the environment), or
 * when connecting fails (one notice line, once: the barrier then polls). */
const struct mdfio_rankfile_fence *mdfio_launcher_fence(void);

#endif
