/* mdfio-posix: the md-workbench cycle with plain synchronous system calls,
 * the same calls md-workbench's POSIX backend makes (sysio.c). */
#include "core.h"
#include "sysio.h"

static const struct mdfio_backend posix_backend = {
	.name = "posix",
	.perform = mdfio_sys_perform,
};

static int posix_init(struct thread_data *td)
{
	return mdfio_init(td, &posix_backend);
}

static struct ioengine_ops posix_ops = {
	.name = "mdfio-posix",
	.version = FIO_IOOPS_VERSION,
	.flags = FIO_SYNCIO | FIO_DISKLESSIO | FIO_NOSTATS | FIO_NOFILEHASH,
	.init = posix_init,
	.setup = mdfio_setup,
	.queue = mdfio_queue,
	.cleanup = mdfio_cleanup,
	.open_file = mdfio_open_file,
	.close_file = mdfio_close_file,
	.option_struct_size = sizeof(struct mdfio_options),
};

void get_ioengine(struct ioengine_ops **ops);
void get_ioengine(struct ioengine_ops **ops)
{
	mdfio_get_ioengine(ops, &posix_ops, NULL);
}
