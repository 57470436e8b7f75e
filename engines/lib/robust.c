#include "robust.h"

#include <errno.h>

int mdfio_robust_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	int err = pthread_mutexattr_init(&a);

	if (err)
		return err;
	err = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	if (!err)
		err = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (!err)
		err = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return err;
}

int mdfio_robust_lock(pthread_mutex_t *m, int wait)
{
	int err = wait ? pthread_mutex_lock(m) : pthread_mutex_trylock(m);

	if (err == EOWNERDEAD) {
		pthread_mutex_consistent(m);
		err = 0;
	}
	return !err;
}

void mdfio_robust_unlock(pthread_mutex_t *m)
{
	pthread_mutex_unlock(m);
}
