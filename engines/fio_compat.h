/* fio's engine-facing API differs between releases without an ABI marker
 * beyond FIO_IOOPS_VERSION; every version-dependent call goes through here. */
#ifndef MDFIO_FIO_COMPAT_H
#define MDFIO_FIO_COMPAT_H

#include "fio.h"

/* 3.38 (ioops 36) replaced offset/ioprio/clat_prio_index by the io_u. */
static inline void mdfio_add_clat(struct thread_data *td, enum fio_ddir ddir,
				  unsigned long long nsec,
				  unsigned long long bytes)
{
#if FIO_IOOPS_VERSION >= 36
	add_clat_sample(td, ddir, nsec, bytes, NULL);
#else
	add_clat_sample(td, ddir, nsec, bytes, 0, 0, 0);
#endif
}

#endif
