/* What one operation of a tree phase adds to its job: its latency in
 * fio's slot for it, or its failure counted (the first one kept in words),
 * as md-workbench counts its operations'. */
#include <stdio.h>
#include <string.h>

#include "tree.h"

/* A message stays one line, whatever the names in it hold. */
void one_line(char *s)
{
	while ((s = strchr(s, '\n')))
		*s = '?';
}

void op_error(struct tree_job *j, const char *what, const char *path, int err)
{
	if (j->errors++)
		return;
	snprintf(j->first_error, sizeof(j->first_error), "%s %s: %s", what, path,
		 err ? strerror(err) : "not the file the copy made (left as it is)");
	one_line(j->first_error);
}

void record(struct thread_data *td, enum fio_ddir dd, uint64_t start, uint64_t end)
{
	if (dd == DDIR_SYNC) {
		td->ts.total_io_u[DDIR_SYNC]++;
		add_sync_clat_sample(&td->ts, end - start);
	} else {
		mdfio_add_clat(td, dd, end - start, 0);
	}
}

void failed_sync(struct thread_data *td)
{
	td->ts.total_io_u[DDIR_SYNC]++;
}
