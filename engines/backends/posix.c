/* mdfio-posix: the md-workbench cycle with plain synchronous system calls,
 * the same calls md-workbench's POSIX backend makes (sysio.c). */
#include "backend.h"
#include "sysio.h"

static int posix_start(void *priv, struct mdfio_unit *u)
{
	(void)priv;
	u->req.t0 = mdfio_now();
	u->req.err = mdfio_sys_perform(&u->req);
	return 1;
}

static const struct mdfio_backend posix_backend = {
	.name = "mdfio-posix",
	.start = posix_start,
	.sync = 1,
	.store = &mdfio_dir_store,
};

MDFIO_EXPORT void get_ioengine(struct ioengine_ops **ops);
void get_ioengine(struct ioengine_ops **ops)
{
	mdfio_get_ioengine(ops, &posix_backend);
}
