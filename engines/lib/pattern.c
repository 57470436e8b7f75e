#include "pattern.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- md-workbench's */

/* md-workbench writes 64-bit words in the host's byte order, one per 8
 * bytes; the size % 8 bytes after the last word hold their own offset. */
#define WORD 8
/* o and i packets stamp the first word of every 4 KiB block */
#define STAMP_EVERY 512
/* r packets: each word is the previous one times this, shifted right by 3 */
#define RANDOM_MUL 0x9e37fffffffc0001ull

static inline uint64_t load(const uint8_t *buf, size_t i)
{
	uint64_t w;

	memcpy(&w, buf + i * WORD, WORD);	/* one load: no alignment or
						 * aliasing assumed */
	return w;
}

static inline void store(uint8_t *buf, size_t i, uint64_t w)
{
	memcpy(buf + i * WORD, &w, WORD);
}

uint32_t mdfio_glibc_rand_r(uint32_t *state)
{
	/* glibc's TYPE_0 generator: three steps of a 32-bit LCG, 11 + 10 +
	 * 10 bits of their high halves */
	uint32_t next = *state, r;

	next = next * 1103515245u + 12345u;
	r = (next >> 16) % 2048;
	next = next * 1103515245u + 12345u;
	r = (r << 10) ^ ((next >> 16) % 1024);
	next = next * 1103515245u + 12345u;
	r = (r << 10) ^ ((next >> 16) % 1024);
	*state = next;
	return r;
}

/* md-workbench's item of an object. It computes index * D + d in int and
 * uses only its low 32 bits (a 32-bit seed, a 32-bit stamp), so the same
 * bits come out of 64-bit arithmetic truncated. */
static uint32_t item(const struct mdfio_pattern *p, uint32_t d, uint64_t index)
{
	return (uint32_t)(index * p->datasets + d);
}

static uint64_t rank_bits(uint32_t rank)
{
	return (uint64_t)rank << 32;
}

/* i: every word the same, from rand_r seeded with seed + rank (md-workbench
 * reseeds it for each word). */
static uint64_t constant(const struct mdfio_pattern *p, uint32_t rank)
{
	uint32_t s = (uint32_t)p->seed + rank;
	uint64_t hi = mdfio_glibc_rand_r(&s);

	return hi << 32 | mdfio_glibc_rand_r(&s);
}

/* o and i: the first word of block k (k = 0, 1, ...) names the object */
static uint64_t stamp(uint32_t rank, uint32_t it, size_t k)
{
	return rank_bits(rank) | (uint32_t)(it * (uint32_t)(k + 1));
}

/* r: the state before the first word, from rand_r seeded with seed + rank
 * + item */
static uint64_t random_start(const struct mdfio_pattern *p, uint32_t rank,
			     uint32_t it)
{
	uint32_t s = (uint32_t)p->seed + rank + it;

	return mdfio_glibc_rand_r(&s);
}

static int stamped(const struct mdfio_pattern *p)
{
	return p->packet == MDFIO_PACKET_OFFSET ||
	       p->packet == MDFIO_PACKET_INCOMPRESSIBLE;
}

/* A template is made whenever a rank's slot is taken by another (objects
 * too large for many slots): in GCC's generic vectors of two words, as
 * SSE2 on x86-64 (NEON on arm64) has them, two a loop, a word costs about
 * three instructions, not seven. (Vectors wider than the machine's are
 * lowered through the stack.) memcpy in and out: no alignment needed. */
typedef uint64_t words2 __attribute__((vector_size(2 * WORD)));
#define LANES 4

/* Words [0, n) = hi | (base + i): t's and o's words. */
static void put_counting(uint8_t *buf, size_t n, uint64_t hi, uint64_t base)
{
	words2 c0 = { base, base + 1 }, c1 = c0 + 2, w0, w1;
	size_t i;

	for (i = 0; i + LANES <= n; i += LANES) {
		w0 = c0 | hi;
		w1 = c1 | hi;
		memcpy(buf + i * WORD, &w0, sizeof(w0));
		memcpy(buf + (i + 2) * WORD, &w1, sizeof(w1));
		c0 += LANES;
		c1 += LANES;
	}
	for (; i < n; i++)
		store(buf, i, hi | (base + i));
}

static void put_constant(uint8_t *buf, size_t n, uint64_t c)
{
	words2 w = { c, c };
	size_t i;

	for (i = 0; i + LANES <= n; i += LANES) {
		memcpy(buf + i * WORD, &w, sizeof(w));
		memcpy(buf + (i + 2) * WORD, &w, sizeof(w));
	}
	for (; i < n; i++)
		store(buf, i, c);
}

/* Object bytes [0, size) of rank's t, o or i objects, stamps left out. t
 * and o: the seed is sign-extended to 64 bits, as md-workbench's int +
 * size_t does (a negative seed sets the high half of the first -seed
 * words). */
static void put_words(const struct mdfio_pattern *p, uint8_t *buf,
		      uint32_t rank)
{
	size_t n = p->size / WORD, i;

	if (p->packet == MDFIO_PACKET_INCOMPRESSIBLE)
		put_constant(buf, n, constant(p, rank));
	else
		put_counting(buf, n, rank_bits(rank), (uint64_t)(int64_t)p->seed);
	for (i = n * WORD; i < p->size; i++)
		buf[i] = (uint8_t)i;
}

/* The template of rank's objects: a slot of a small cache, made on a miss.
 * A job's objects belong to at most 2D + 1 ranks (its own, those it reads
 * from and those it writes to), so with enough slots each is made once, and
 * a create is a memcpy and a verify a memcmp, as fast as mdfio's pattern. */
static const uint8_t *template_of(const struct mdfio_pattern *p, uint32_t rank)
{
	/* Fibonacci hashing: ranks O apart land in different slots */
	size_t slot = p->slot_bits ? (uint32_t)(rank * 0x9e3779b9u) >> (32 - p->slot_bits) : 0;
	uint8_t *t = p->templates + slot * p->size;

	if (p->slot_rank[slot] != rank) {
		put_words(p, t, rank);
		p->slot_rank[slot] = rank;
	}
	return t;
}

/* One word of r's chain: md-workbench's "golden ratio" step. */
#define RANDOM_STEP(x) ((x) * RANDOM_MUL >> 3)

static void put_random(const struct mdfio_pattern *p, uint8_t *buf, size_t n,
		       uint32_t rank, uint32_t it)
{
	uint64_t x = random_start(p, rank, it);
	size_t i;

	/* each word needs the one before: no vectors, but an unrolled
	 * chain keeps the loop's own instructions off most words */
	for (i = 0; i + 4 <= n; i += 4) {
		x = RANDOM_STEP(x);
		store(buf, i, x);
		x = RANDOM_STEP(x);
		store(buf, i + 1, x);
		x = RANDOM_STEP(x);
		store(buf, i + 2, x);
		x = RANDOM_STEP(x);
		store(buf, i + 3, x);
	}
	for (; i < n; i++) {
		x = RANDOM_STEP(x);
		store(buf, i, x);
	}
}

static void mdw_write(const struct mdfio_pattern *p, uint8_t *buf,
		      uint64_t *held, uint32_t rank, uint32_t it)
{
	size_t n = p->size / WORD, i, k;

	if (p->packet == MDFIO_PACKET_RANDOM) {
		if (*held == MDFIO_PATTERN_FRESH)
			for (i = n * WORD; i < p->size; i++)
				buf[i] = (uint8_t)i;
		put_random(p, buf, n, rank, it);
		*held = 0;
		return;
	}
	/* t, o and i differ between objects of one rank only in the stamps,
	 * which the next object overwrites: a create buffer keeps its words
	 * while its objects' rank stays (a whole precreate) */
	if (*held != rank)
		memcpy(buf, template_of(p, rank), p->size);
	*held = rank;
	if (stamped(p))
		for (k = 0; k * STAMP_EVERY < n; k++)
			store(buf, k * STAMP_EVERY, stamp(rank, it, k));
}

static int check_random(const struct mdfio_pattern *p, const uint8_t *buf,
			uint32_t rank, uint32_t it)
{
	size_t n = p->size / WORD, i;
	uint64_t x = random_start(p, rank, it), acc = 0;

	for (i = 0; i + 4 <= n; i += 4) {
		x = RANDOM_STEP(x);
		acc |= load(buf, i) ^ x;
		x = RANDOM_STEP(x);
		acc |= load(buf, i + 1) ^ x;
		x = RANDOM_STEP(x);
		acc |= load(buf, i + 2) ^ x;
		x = RANDOM_STEP(x);
		acc |= load(buf, i + 3) ^ x;
	}
	for (; i < n; i++) {
		x = RANDOM_STEP(x);
		acc |= load(buf, i) ^ x;
	}
	for (i = n * WORD; i < p->size; i++)
		acc |= buf[i] ^ (uint8_t)i;
	return acc != 0;
}

/* md-workbench's -X checks every byte of what it writes: so does this. */
static int mdw_check(const struct mdfio_pattern *p, const uint8_t *buf,
		     uint32_t rank, uint32_t it)
{
	size_t n = p->size / WORD, k, from, to;
	const uint8_t *t;

	if (p->packet == MDFIO_PACKET_RANDOM)
		return check_random(p, buf, rank, it);
	t = template_of(p, rank);
	if (!stamped(p) || !n)
		return memcmp(buf, t, p->size) != 0;
	/* each stamp, then the bytes up to the next (the last: to the end) */
	for (k = 0; k * STAMP_EVERY < n; k++) {
		from = (k * STAMP_EVERY + 1) * WORD;
		to = (k + 1) * STAMP_EVERY < n ? (k + 1) * STAMP_EVERY * WORD : p->size;
		if (load(buf, k * STAMP_EVERY) != stamp(rank, it, k) ||
		    memcmp(buf + from, t + from, to - from))
			return 1;
	}
	return 0;
}

/* ------------------------------------------------------------- mdfio's */

static const uint8_t magic[8] = { 'm', 'd', 'f', 'i', 'o', 'o', 'b', '1' };

static void fill(uint8_t *buf, size_t size)
{
	uint32_t x = 0x9e3779b9u;
	size_t i;

	/* xorshift: incompressible enough that a deduplicating or compressing
	 * file system cannot turn object writes into no-ops */
	for (i = 0; i < size; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		buf[i] = (uint8_t)x;
	}
}

static void header(uint8_t h[MDFIO_HEADER_SIZE], uint32_t rank,
		   uint32_t dataset, uint64_t index)
{
	/* little-endian on every host, so objects verify across machines */
	uint32_t r = htole32(rank), d = htole32(dataset);
	uint64_t i = htole64(index);

	memcpy(h, magic, 8);
	memcpy(h + 8, &r, 4);
	memcpy(h + 12, &d, 4);
	memcpy(h + 16, &i, 8);
}

static size_t header_len(const struct mdfio_pattern *p)
{
	/* an object shorter than the header holds the start of it */
	return p->size < MDFIO_HEADER_SIZE ? p->size : MDFIO_HEADER_SIZE;
}

static void mdfio_write(const struct mdfio_pattern *p, uint8_t *buf,
			uint64_t *held, uint32_t rank, uint32_t dataset,
			uint64_t index)
{
	uint8_t h[MDFIO_HEADER_SIZE];

	/* the filler is the same in every object: only the header changes */
	if (*held == MDFIO_PATTERN_FRESH)
		memcpy(buf, p->filler, p->size);
	*held = 0;
	header(h, rank, dataset, index);
	memcpy(buf, h, header_len(p));
}

static int mdfio_check(const struct mdfio_pattern *p, const uint8_t *buf,
		       uint32_t rank, uint32_t dataset, uint64_t index)
{
	uint8_t h[MDFIO_HEADER_SIZE];
	size_t hl = header_len(p);

	header(h, rank, dataset, index);
	if (memcmp(buf, h, hl))
		return 1;
	return memcmp(buf + hl, p->filler + hl, p->size - hl) ? 1 : 0;
}

/* ---------------------------------------------------------------- both */

/* Template slots: 2^bits, enough for 2D + 1 ranks but at most 64, in at
 * most MDFIO_TEMPLATE_BYTES unless one slot is larger. A slot no rank
 * hashes to is never touched, so its pages are never backed. */
#define MDFIO_TEMPLATE_BYTES (16u << 20)

static unsigned int slot_bits(uint32_t datasets, size_t size)
{
	unsigned int bits = 0;

	while (bits < 6 && ((size_t)1 << bits) < 2 * (size_t)datasets + 1 &&
	       ((size_t)2 << bits) * size <= MDFIO_TEMPLATE_BYTES)
		bits++;
	return bits;
}

static int init_templates(struct mdfio_pattern *p)
{
	size_t slots, i;

	p->slot_bits = slot_bits(p->datasets, p->size);
	slots = (size_t)1 << p->slot_bits;
	p->templates = malloc(slots * (p->size ? p->size : 1));
	p->slot_rank = malloc(slots * sizeof(*p->slot_rank));
	if (!p->templates || !p->slot_rank)
		return -1;
	for (i = 0; i < slots; i++)
		p->slot_rank[i] = MDFIO_PATTERN_FRESH;
	return 0;
}

int mdfio_pattern_init(struct mdfio_pattern *p, enum mdfio_pattern_kind kind,
		       enum mdfio_packet packet, int32_t seed,
		       uint32_t datasets, size_t size)
{
	*p = (struct mdfio_pattern){ .kind = kind, .packet = packet,
				     .seed = seed, .datasets = datasets,
				     .size = size };
	if (kind == MDFIO_PATTERN_MD_WORKBENCH)
		return packet == MDFIO_PACKET_RANDOM ? 0 : init_templates(p);
	p->filler = malloc(size ? size : 1);
	if (!p->filler)
		return -1;
	fill(p->filler, size);
	return 0;
}

void mdfio_pattern_free(struct mdfio_pattern *p)
{
	free(p->filler);
	free(p->templates);
	free(p->slot_rank);
	p->filler = p->templates = NULL;
	p->slot_rank = NULL;
}

void mdfio_pattern_write(const struct mdfio_pattern *p, uint8_t *buf,
			 uint64_t *held, uint32_t rank, uint32_t dataset,
			 uint64_t index)
{
	if (p->kind == MDFIO_PATTERN_MDFIO)
		mdfio_write(p, buf, held, rank, dataset, index);
	else
		mdw_write(p, buf, held, rank, item(p, dataset, index));
}

int mdfio_pattern_check(const struct mdfio_pattern *p, const uint8_t *buf,
			uint32_t rank, uint32_t dataset, uint64_t index)
{
	if (p->kind == MDFIO_PATTERN_MDFIO)
		return mdfio_check(p, buf, rank, dataset, index);
	return mdw_check(p, buf, rank, item(p, dataset, index));
}

/* ------------------------------------------------------------- options */

int mdfio_pattern_kind_parse(const char *s)
{
	if (!strcmp(s, "md-workbench"))
		return MDFIO_PATTERN_MD_WORKBENCH;
	if (!strcmp(s, "mdfio"))
		return MDFIO_PATTERN_MDFIO;
	return -1;
}

int mdfio_packet_parse(const char *s)
{
	static const char *const names[] = {
		[MDFIO_PACKET_TIMESTAMP] = "timestamp",
		[MDFIO_PACKET_OFFSET] = "offset",
		[MDFIO_PACKET_INCOMPRESSIBLE] = "incompressible",
		[MDFIO_PACKET_RANDOM] = "random",
	};
	int t;

	/* md-workbench looks at the first letter only; mdfio takes the
	 * letter or the whole name, so that a typo is refused */
	for (t = 0; t < (int)(sizeof(names) / sizeof(names[0])); t++)
		if ((s[0] == names[t][0] && !s[1]) || !strcmp(s, names[t]))
			return t;
	return -1;
}
