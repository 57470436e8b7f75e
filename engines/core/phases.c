/* What each phase is (the table every difference between the phases lives
 * in), the names of md-workbench's operations, and how many units a phase's
 * options make. It calls nothing: every module of the core may look here. */
#include <stdint.h>

#include "job.h"

const char *const mdfio_op_names[MDFIO_OP_NR] = {
	[MDFIO_OP_CREATE] = "create", [MDFIO_OP_STAT] = "stat",
	[MDFIO_OP_READ] = "read", [MDFIO_OP_DELETE] = "delete",
};

const struct mdfio_phase_desc mdfio_phases[] = {
	[MDFIO_PRECREATE] = {
		.unit = "create",
		.ddir = DDIR_WRITE, .rw = TD_DDIR_WRITE, .rw_name = "write",
		.steps = { { MDFIO_OP_CREATE, MDFIO_OWN, 0 } },
		.nr_steps = 1, .nr_steps_read_only = 1,
		.log_name = { [MDFIO_OP_CREATE] = "precreate" },
		.logs_before_status = 1, .makes_datasets = 1,
		.working = MDFIO_RS_PRECREATING, .done = MDFIO_RS_READY,
	},
	/* one md-workbench step: stat, read, delete an object of the read
	 * rank, create one for the write rank; read_only stops after the
	 * read */
	[MDFIO_BENCHMARK] = {
		.unit = "step",
		.ddir = DDIR_READ, .rw = TD_DDIR_READ, .rw_name = "read",
		.per_set_is_steps = 1,
		.steps = {
			{ MDFIO_OP_STAT, MDFIO_READ_FROM, 0 },
			{ MDFIO_OP_READ, MDFIO_READ_FROM, 0 },
			{ MDFIO_OP_DELETE, MDFIO_READ_FROM, 0 },
			{ MDFIO_OP_CREATE, MDFIO_WRITE_TO, 1 },
		},
		.nr_steps = 4, .nr_steps_read_only = 2,
		.log_name = { [MDFIO_OP_CREATE] = "create", [MDFIO_OP_STAT] = "stat",
			      [MDFIO_OP_READ] = "read", [MDFIO_OP_DELETE] = "delete" },
		.working = MDFIO_RS_BENCHMARKING, .done = MDFIO_RS_READY,
		.advances = 1,
	},
	[MDFIO_CLEANUP] = {
		.unit = "delete",
		.ddir = DDIR_TRIM, .rw = TD_DDIR_TRIM, .rw_name = "trim",
		.dataset_major = 1,
		.steps = { { MDFIO_OP_DELETE, MDFIO_OWN, 0 } },
		.nr_steps = 1, .nr_steps_read_only = 1,
		.log_name = { [MDFIO_OP_DELETE] = "cleanup" },
		.removes_datasets = 1,
		.working = MDFIO_RS_CLEANING, .done = MDFIO_RS_CLEANED,
	},
};

uint64_t mdfio_phase_units(const struct mdfio_options *eo)
{
	/* phase unset: refused later, by init */
	int steps = eo->phase && mdfio_phases[eo->phase - 1].per_set_is_steps;
	uint64_t per_set = steps ? eo->steps : eo->precreate;
	return per_set * eo->datasets;
}
