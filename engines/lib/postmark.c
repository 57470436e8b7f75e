/* PostMark's sequence of operations (postmark.h). Every draw from the
 * generator is made where postmark makes it, in its order, and only when
 * postmark makes it (RND(0) draws nothing): one draw more or less would
 * change every later decision. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "postmark.h"

const char *const mdfio_pm_kind_names[MDFIO_PM_KIND_NR] = {
	"create", "read", "append", "delete"
};

#define MT_N 624
#define MT_M 397

/* PostMark 1.5's seeding of MT19937 (Matsumoto and Nishimura's 1998
 * sgenrand): each state word takes the high halves of two steps of the
 * linear congruential generator x -> 69069 x + 1. Only the low 32 bits of
 * postmark's unsigned long ever matter. */
static void mt_seed(struct mdfio_pm *pm, uint32_t s)
{
	for (unsigned int i = 0; i < MT_N; i++) {
		uint32_t hi = s & 0xffff0000u;

		s = 69069u * s + 1;
		pm->mt[i] = hi | (s >> 16);
		s = 69069u * s + 1;
	}
	pm->mti = MT_N;
}

static uint32_t mt_twist(uint32_t a, uint32_t b, uint32_t far)
{
	uint32_t y = (a & 0x80000000u) | (b & 0x7fffffffu);

	return far ^ (y >> 1) ^ ((y & 1) ? 0x9908b0dfu : 0);
}

static uint32_t mt_next(struct mdfio_pm *pm)
{
	uint32_t *mt = pm->mt, y;

	if (pm->mti >= MT_N) {
		unsigned int k;

		for (k = 0; k < MT_N - MT_M; k++)
			mt[k] = mt_twist(mt[k], mt[k + 1], mt[k + MT_M]);
		for (; k < MT_N - 1; k++)
			mt[k] = mt_twist(mt[k], mt[k + 1], mt[k + MT_M - MT_N]);
		mt[MT_N - 1] = mt_twist(mt[MT_N - 1], mt[0], mt[MT_M - 1]);
		pm->mti = 0;
	}
	y = mt[pm->mti++];
	y ^= y >> 11;
	y ^= (y << 7) & 0x9d2c5680u;
	y ^= (y << 15) & 0xefc60000u;
	y ^= y >> 18;
	return y;
}

/* postmark's RND(x): nothing is drawn when x is 0 */
static uint32_t rnd(struct mdfio_pm *pm, uint32_t x)
{
	return x ? mt_next(pm) % x : 0;
}

const char *mdfio_pm_check(const struct mdfio_pm_params *p)
{
	if (!p->size_low || p->size_high < p->size_low)
		return "size: expected a low bound of 1 or more and a high bound not below it";
	if (p->size_high > MDFIO_PM_MAX)
		return "size: the high bound must be below 2^30 (postmark doubles it in an int)";
	if (!p->number || p->number > MDFIO_PM_MAX)
		return "number: expected 1 to 2^30-1 files";
	if (!p->transactions || p->transactions > INT32_MAX)
		return "transactions: expected 1 to 2^31-1";
	if (p->bias_read < -1 || p->bias_read > 10 || p->bias_create < -1 || p->bias_create > 10)
		return "bias: expected -1 (off) to 10";
	if (!p->read_block || !p->write_block || p->read_block > INT32_MAX || p->write_block > INT32_MAX)
		return "read and write block sizes: expected 1 to 2^31-1 bytes";
	if (!p->seed || p->seed > INT32_MAX)
		return "seed: expected 1 to 2^31-1 (postmark takes no other)";
	return NULL;
}

int mdfio_pm_init(struct mdfio_pm *pm, const struct mdfio_pm_params *p, char *source)
{
	*pm = (struct mdfio_pm){ .p = *p };
	mt_seed(pm, p->seed);
	/* postmark fills its content buffer before anything else */
	for (uint32_t i = 0; i < 2 * p->size_high; i++) {
		char c = (char)(32 + rnd(pm, 95));

		if (source)
			source[i] = c;
	}
	pm->table = calloc(2 * (size_t)p->number, sizeof(*pm->table));
	return pm->table ? 0 : ENOMEM;
}

void mdfio_pm_free(struct mdfio_pm *pm)
{
	free(pm->table);
	pm->table = NULL;
}

/* postmark's find_free_file: the slot after the last one taken if free,
 * else the first free one; -1 when all 2 * number are in use */
static int64_t free_slot(struct mdfio_pm *pm)
{
	uint32_t slots = 2 * pm->p.number;

	if (pm->allocated < slots && !pm->table[pm->allocated].size)
		return pm->allocated++;
	for (uint32_t i = 0; i < slots; i++)
		if (!pm->table[i].size) {
			pm->allocated = i + 1;
			return i;
		}
	return -1;
}

/* postmark's find_used_file: draws slots until one holds a file (there is
 * one: a transaction starts only while a file is left) */
static struct mdfio_pm_slot *used_slot(struct mdfio_pm *pm)
{
	struct mdfio_pm_slot *s;

	do
		s = &pm->table[rnd(pm, 2 * pm->p.number)];
	while (!s->size);
	return s;
}

static int create(struct mdfio_pm *pm, struct mdfio_pm_op *op)
{
	int64_t k = free_slot(pm);
	struct mdfio_pm_slot *s;

	if (k < 0)
		return 0;
	s = &pm->table[k];
	s->subdir = pm->p.subdirectories > 1 ? rnd(pm, pm->p.subdirectories) : 0;
	s->file = ++pm->created;
	s->size = pm->p.size_low + rnd(pm, pm->p.size_high - pm->p.size_low);
	pm->bytes_written += (float)s->size;
	*op = (struct mdfio_pm_op){ .kind = MDFIO_PM_CREATE, .file = s->file,
				    .subdir = s->subdir, .bytes = s->size,
				    .seq = ++pm->seq };
	s->last = op->seq;
	return 1;
}

/* An operation on the file in slot s, after the file's last one. */
static void take(struct mdfio_pm *pm, struct mdfio_pm_op *op, enum mdfio_pm_kind kind,
		 struct mdfio_pm_slot *s, uint32_t bytes)
{
	*op = (struct mdfio_pm_op){ .kind = kind, .file = s->file,
				    .subdir = s->subdir, .bytes = bytes,
				    .seq = ++pm->seq, .after = s->last };
	s->last = op->seq;
}

static void delete(struct mdfio_pm *pm, struct mdfio_pm_slot *s, struct mdfio_pm_op *op)
{
	take(pm, op, MDFIO_PM_DELETE, s, 0);
	s->size = 0;
	pm->deleted++;
}

/* The first half of transaction i: read or append a file. 0 when it does
 * nothing (an append to a file at the high bound, or the half is off). */
static int read_or_append(struct mdfio_pm *pm, struct mdfio_pm_op *op)
{
	uint32_t r, high = pm->p.size_high;
	struct mdfio_pm_slot *s;

	if (pm->p.bias_read == -1)
		return 0;
	r = rnd(pm, 10);
	s = used_slot(pm);
	if ((int)r < pm->p.bias_read) {
		take(pm, op, MDFIO_PM_READ, s, s->size);
		pm->read++;
		pm->bytes_read += (float)s->size;
		return 1;
	}
	if (s->size >= high)
		return 0;
	take(pm, op, MDFIO_PM_APPEND, s, rnd(pm, high - s->size) + 1);
	s->size += op->bytes;
	pm->appended++;
	pm->bytes_written += (float)op->bytes;
	return 1;
}

static int create_or_delete(struct mdfio_pm *pm, struct mdfio_pm_op *op)
{
	if (pm->p.bias_create == -1)
		return 0;
	if ((int)rnd(pm, 10) < pm->p.bias_create)
		return create(pm, op);
	delete(pm, used_slot(pm), op);
	return 1;
}

int mdfio_pm_next(struct mdfio_pm *pm, struct mdfio_pm_op *op)
{
	for (;;) {
		enum mdfio_pm_phase ph = pm->phase;
		int got = 0;

		switch (ph) {
		case MDFIO_PM_POOL:
			if (pm->i == pm->p.number) {
				pm->phase = MDFIO_PM_TRANSACTIONS;
				pm->i = 0;
				continue;
			}
			pm->i++;
			got = create(pm, op);
			break;
		case MDFIO_PM_TRANSACTIONS:
			if (pm->i == pm->p.transactions) {
				pm->phase = MDFIO_PM_DELETION;
				pm->i = 0;
				continue;
			}
			op->transaction = pm->i;
			if (!pm->half) {
				if (pm->created == pm->deleted) {
					/* postmark: "out of files!" */
					pm->out_of_files = 1;
					pm->phase = MDFIO_PM_DELETION;
					pm->i = 0;
					continue;
				}
				pm->half = 1;
				got = read_or_append(pm, op);
			} else {
				pm->half = 0;
				pm->i++;
				got = create_or_delete(pm, op);
			}
			if (got)
				op->transaction = pm->half ? pm->i : pm->i - 1;
			break;
		case MDFIO_PM_DELETION:
			if (pm->i == 2 * pm->p.number) {
				pm->phase = MDFIO_PM_DONE;
				continue;
			}
			if (pm->table[pm->i].size) {
				delete(pm, &pm->table[pm->i], op);
				pm->deleted_alone++;
				got = 1;
			}
			pm->i++;
			break;
		case MDFIO_PM_DONE:
			return 0;
		}
		if (got) {
			op->phase = ph;
			return 1;
		}
	}
}

int mdfio_pm_name(char *buf, size_t len, const struct mdfio_pm_params *p,
		  const struct mdfio_pm_op *op)
{
	int n = p->subdirectories > 1 ?
		snprintf(buf, len, "s%u/%u", op->subdir, op->file) :
		snprintf(buf, len, "%u", op->file);

	return n < 0 || (size_t)n >= len ? -1 : n;
}
