/* What the core asks of fio's job table and owes fio about a job: the job
 * a clone was made from, and the answers to fio's requests for statistics
 * while a job waits outside fio's loop (see mdfio_answer_fio in job.h). */
#include "fio_compat.h"
#include "job.h"

/* The job a clone was made from: fio gives clones numjobs=1 and places them
 * right after their parent (subjob 0), which keeps the real numjobs. */
struct thread_data *mdfio_job_parent(struct thread_data *td)
{
	struct thread_data *t, *parent = td;
	int i;

	if (!td->subjob_number)
		return td;
	mdfio_for_each_td(t, i) {
		if (t->thread_number > td->thread_number)
			break;
		if (!t->subjob_number)
			parent = t;
	}
	return parent;
}

void mdfio_answer_fio(struct thread_data *td)
{
	/* what fio's own loop does between io_us (check_update_rusage in
	 * backend.c), in the job's own thread: the usage is this thread's */
	if (!td->update_rusage || !td->rusage_sem)
		return;
	td->update_rusage = 0;
	update_rusage_stat(td);
	fio_sem_up(td->rusage_sem);
}

void mdfio_answer_fio_waiting(void *td)
{
	mdfio_answer_fio(td);
}
