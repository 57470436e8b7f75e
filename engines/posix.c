/* mdfio-posix: the md-workbench cycle with plain synchronous system calls,
 * the same calls md-workbench's POSIX backend makes (sysio.c). */
#include "core.h"
#include "sysio.h"

static const struct mdfio_backend posix_backend = {
	.name = "mdfio-posix",
	.perform = mdfio_sys_perform,
};

void get_ioengine(struct ioengine_ops **ops);
void get_ioengine(struct ioengine_ops **ops)
{
	mdfio_get_ioengine(ops, &posix_backend);
}
