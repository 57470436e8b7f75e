/* A study workload's rank file in fio's main process, opened as the core
 * reserves md-workbench's ranks (core/reserve.c) at the setup of the
 * first job of each root, so that the jobs share one waiter at the rank
 * file's barrier, wait in the launcher's collective where one serves PMIx
 * (core/launcher.c), and stop once the launcher that started this fio is
 * gone (core/orphan.c); closed by the last job of this fio on the root.
 * It holds no ranks: a workload's sections number their ranks each by its
 * own numjobs, so no one range stays this fio's from phase to phase. */
#ifndef MDFIO_WORKLOAD_RESERVE_H
#define MDFIO_WORKLOAD_RESERVE_H

#include <stddef.h>
#include <stdint.h>

#include "rankfile.h"

struct thread_data;

/* In fio's main process, at a job's setup: the rank file of td's
 * directory, for this fio on host; launcher is the variable of the
 * launcher that numbered the ranks (NULL: none). 0; 1 with one line in
 * msg; 2 where an earlier job of the root was refused (and said why). A
 * job set up in its own process (create_serialize=0), or whose directory
 * does not open, reserves nothing: its claim then stands alone. */
int mdfio_workload_reserve(struct thread_data *td, const char *host, const char *launcher,
			   char *msg, size_t len);
/* This fio's reservation of root, for mdfio_rankfile_claim_reserved
 * (NULL: none). */
const struct mdfio_rankfile *mdfio_workload_reservation(const char *root);
/* A job of td's directory has ended (its claim released): the last one
 * of this fio gives the reservation up. */
void mdfio_workload_job_ended(struct thread_data *td);
/* A struct mdfio_rankfile's stopped: 1, with why, once nobody is left to
 * receive the results (core/orphan.c), so that a barrier stops; its rank
 * says why. */
int mdfio_workload_orphaned(void *arg, char *why, size_t len);
/* Whether a barrier of this fio stopped so: the run stops there, and no
 * later phase starts (nor says it again). */
int mdfio_workload_stopped(void);

#endif
