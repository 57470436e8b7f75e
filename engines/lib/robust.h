/* Mutexes in memory that fio's main process maps before it forks its jobs,
 * shared by the jobs (processes or threads) and robust: the kernel frees a
 * lock whose holder dies, and the next to take it goes on with what it
 * guards as it stands. A spin lock there waited for ever on a job killed
 * while it held it. */
#ifndef MDFIO_ROBUST_H
#define MDFIO_ROBUST_H

#include <pthread.h>

/* 0, or an errno value. */
int mdfio_robust_init(pthread_mutex_t *m);
/* Takes m (waiting for it if wait): 1 taken, 0 held by a live holder
 * (no wait only). */
int mdfio_robust_lock(pthread_mutex_t *m, int wait);
void mdfio_robust_unlock(pthread_mutex_t *m);

#endif
