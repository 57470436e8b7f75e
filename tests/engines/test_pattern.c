/* Object content of engines/lib/pattern.c. md-workbench's pattern against a
 * second, literal model of IOR's formula (docs/engines.md) and against
 * bytes IOR's md-workbench wrote; a reused create buffer against a fresh
 * one; every packet type's verify against each corruption it must catch.
 * mdfio's own pattern: a stamped object verifies as itself only. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "pattern.h"
#include "check.h"

#define T MDFIO_PACKET_TIMESTAMP
#define O MDFIO_PACKET_OFFSET
#define I MDFIO_PACKET_INCOMPRESSIBLE
#define R MDFIO_PACKET_RANDOM
static const char *const packet_name = "toir";

static const int32_t seeds[] = { 0, 7, 42, -5, INT32_MAX, INT32_MIN };
/* across the 8-byte words and the 4 KiB blocks o and i stamp */
static const size_t sizes[] = { 1, 7, 8, 9, 24, 40, 3901, 4095, 4096, 4103,
				4104, 4105, 8200, 65536 + 5 };

#define NSEEDS (sizeof(seeds) / sizeof(seeds[0]))
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* glibc's rand_r, written out once more: the model must not share code
 * with what it checks */
static int model_rand(unsigned int *s)
{
	unsigned int next = *s;
	int r;

	next = next * 1103515245 + 12345;
	r = (int)((next / 65536) % 2048);
	next = next * 1103515245 + 12345;
	r = (r << 10) ^ (int)((next / 65536) % 1024);
	next = next * 1103515245 + 12345;
	r = (r << 10) ^ (int)((next / 65536) % 1024);
	*s = next;
	return r;
}

/* md-workbench's object (rank, d, f) in D datasets, word by word as its
 * generate, update and verify functions define it */
static void model(uint8_t *out, size_t size, int packet, int32_t seed,
		  uint32_t rank, uint32_t datasets, uint32_t d, uint64_t f)
{
	uint32_t item = (uint32_t)(f * datasets + d);
	uint64_t state = 0;
	unsigned int s;
	size_t i, n = size / 8;

	if (packet == R) {
		s = (unsigned int)seed + rank + item;
		state = (uint64_t)model_rand(&s);
	}
	for (i = 0; i < n; i++) {
		uint64_t w = ((uint64_t)rank << 32) | ((uint64_t)(int64_t)seed + i);

		if (packet == I) {
			s = (unsigned int)seed + rank;
			w = (uint64_t)model_rand(&s) << 32;
			w |= (uint64_t)model_rand(&s);
		}
		if ((packet == O || packet == I) && i % 512 == 0)
			w = ((uint64_t)rank << 32) | (uint32_t)(item * (uint32_t)(i / 512 + 1));
		if (packet == R) {
			state = state * 0x9e37fffffffc0001ull >> 3;
			w = state;
		}
		memcpy(out + 8 * i, &w, 8);
	}
	for (i = n * 8; i < size; i++)
		out[i] = (uint8_t)i;
}

static void test_rand_r(void)
{
	uint32_t seed;

	/* fixed numbers of glibc's rand_r, so the test holds on any libc */
	seed = 0;
	CHECK(mdfio_glibc_rand_r(&seed) == 1012484u, "rand_r(0)");
	seed = 12345;
	CHECK(mdfio_glibc_rand_r(&seed) == 1036784229u && mdfio_glibc_rand_r(&seed) == 1520991917u,
	      "rand_r(12345) twice");
	for (seed = 0; seed < 100000; seed += 7) {
		uint32_t a = seed, m = seed;
		int k;

		for (k = 0; k < 3; k++)
			CHECK(mdfio_glibc_rand_r(&a) == (uint32_t)model_rand(&m) && a == m,
			      "rand_r(%" PRIu32 ") draw %d", seed, k);
#ifdef __GLIBC__
		{
			unsigned int g = seed;

			a = seed;
			CHECK(mdfio_glibc_rand_r(&a) == (uint32_t)rand_r(&g) && a == g,
			      "rand_r(%" PRIu32 "): not glibc's", seed);
		}
#endif
	}
}

/* one object of md-workbench's pattern: written fresh, as the model says */
static void test_model_one(int packet, int32_t seed, size_t size)
{
	struct mdfio_pattern p;
	uint8_t *got = malloc(size), *want = malloc(size);
	static const uint32_t ranks[] = { 0, 1, 5, 4000000000u };
	static const uint64_t idx[] = { 0, 1, 2, 511, 4096, 123456789012ull };
	unsigned int a, b;
	uint64_t held;

	CHECK(!mdfio_pattern_init(&p, MDFIO_PATTERN_MD_WORKBENCH, packet, seed, 3, size), "init");
	for (a = 0; a < 4; a++) {
		for (b = 0; b < 6; b++) {
			held = MDFIO_PATTERN_FRESH;
			memset(got, 0xA5, size);
			mdfio_pattern_write(&p, got, &held, ranks[a], 2, idx[b]);
			model(want, size, packet, seed, ranks[a], 3, 2, idx[b]);
			CHECK(!memcmp(got, want, size), "%c seed %" PRId32 " size %zu rank %" PRIu32 " index %" PRIu64,
			      packet_name[packet], seed, size, ranks[a], idx[b]);
			CHECK(!mdfio_pattern_check(&p, want, ranks[a], 2, idx[b]),
			      "%c seed %" PRId32 " size %zu: the model's object refused",
			      packet_name[packet], seed, size);
		}
	}
	mdfio_pattern_free(&p);
	free(got);
	free(want);
}

static void test_model(void)
{
	int packet;
	size_t s, z;

	for (packet = T; packet <= R; packet++)
		for (s = 0; s < NSEEDS; s++)
			for (z = 0; z < NSIZES; z++)
				test_model_one(packet, seeds[s], sizes[z]);
}

/* Bytes IOR's md-workbench wrote (tests/fixtures/md-workbench/README.md):
 * -S 40 -G 7 -D 2, object 1_1/file-2 */
static void test_recorded(void)
{
	static const uint8_t t40[40] = {
		7, 0, 0, 0, 1, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0,
		9, 0, 0, 0, 1, 0, 0, 0, 10, 0, 0, 0, 1, 0, 0, 0,
		11, 0, 0, 0, 1, 0, 0, 0 };
	struct mdfio_pattern p;
	uint8_t got[40];
	uint64_t held = MDFIO_PATTERN_FRESH;

	if (*(const uint8_t *)&(uint16_t){ 1 } != 1)
		return;		/* recorded on a little-endian host */
	mdfio_pattern_init(&p, MDFIO_PATTERN_MD_WORKBENCH, T, 7, 2, 40);
	mdfio_pattern_write(&p, got, &held, 1, 1, 2);
	CHECK(!memcmp(got, t40, 40), "t -G 7 -S 40: not md-workbench's bytes");
	CHECK(!mdfio_pattern_check(&p, t40, 1, 1, 2), "md-workbench's object refused");
	mdfio_pattern_free(&p);
}

/* A create buffer reused for objects of changing ranks and indices holds
 * each exactly as a fresh one would. */
static void test_reuse_one(int kind, int packet, size_t size)
{
	static const uint32_t ranks[] = { 1, 1, 1, 2, 0, 2, 2, 1 };
	struct mdfio_pattern p;
	uint8_t *buf = malloc(size), *fresh = malloc(size);
	uint64_t held = MDFIO_PATTERN_FRESH, h;
	unsigned int k;

	mdfio_pattern_init(&p, kind, packet, 42, 4, size);
	memset(buf, 0, size);
	for (k = 0; k < 8; k++) {
		mdfio_pattern_write(&p, buf, &held, ranks[k], k % 4, 1000 + k);
		h = MDFIO_PATTERN_FRESH;
		mdfio_pattern_write(&p, fresh, &h, ranks[k], k % 4, 1000 + k);
		CHECK(!memcmp(buf, fresh, size), "kind %d %c size %zu: object %u differs when reused",
		      kind, packet_name[packet], size, k);
		CHECK(!mdfio_pattern_check(&p, buf, ranks[k], k % 4, 1000 + k),
		      "kind %d %c size %zu: object %u refused", kind, packet_name[packet], size, k);
	}
	mdfio_pattern_free(&p);
	free(buf);
	free(fresh);
}

/* Objects of more ranks than a pattern has template slots (a large object
 * has one): each as the model says, in turn. */
static void test_slots_shared(int packet, uint32_t datasets, size_t size)
{
	static const uint32_t ranks[] = { 0, 1, 0, 2, 3, 4, 5, 6, 7, 8, 1, 0 };
	struct mdfio_pattern p;
	uint8_t *buf = malloc(size), *want = malloc(size);
	uint64_t held = MDFIO_PATTERN_FRESH;
	unsigned int k;

	mdfio_pattern_init(&p, MDFIO_PATTERN_MD_WORKBENCH, packet, 3, datasets, size);
	for (k = 0; k < sizeof(ranks) / sizeof(ranks[0]); k++) {
		model(want, size, packet, 3, ranks[k], datasets, 0, k);
		CHECK(!mdfio_pattern_check(&p, want, ranks[k], 0, k), "%c size %zu: rank %" PRIu32 " refused",
		      packet_name[packet], size, ranks[k]);
		mdfio_pattern_write(&p, buf, &held, ranks[k], 0, k);
		CHECK(!memcmp(buf, want, size), "%c size %zu: rank %" PRIu32 " differs",
		      packet_name[packet], size, ranks[k]);
		CHECK(mdfio_pattern_check(&p, want, ranks[k] + 1, 0, k), "%c size %zu: rank %" PRIu32 " + 1 accepted",
		      packet_name[packet], size, ranks[k]);
	}
	mdfio_pattern_free(&p);
	free(buf);
	free(want);
}

static void test_reuse(void)
{
	int packet;
	size_t z;

	for (z = 0; z < NSIZES; z++) {
		for (packet = T; packet <= R; packet++)
			test_reuse_one(MDFIO_PATTERN_MD_WORKBENCH, packet, sizes[z]);
		test_reuse_one(MDFIO_PATTERN_MDFIO, T, sizes[z]);
	}
	for (packet = T; packet <= I; packet++) {
		test_slots_shared(packet, 1, 4104);
		test_slots_shared(packet, 10, 9u << 20);
	}
}

/* Every byte flipped is refused; another rank, seed, or (but for t, whose
 * content names no object) another index or dataset too. */
static void test_refusals_one(int packet, size_t size)
{
	struct mdfio_pattern p, other;
	uint8_t *obj = malloc(size);
	uint64_t held = MDFIO_PATTERN_FRESH;
	size_t i, step = size > 9000 ? 13 : 1;
	int words = size >= 8;
	/* o and i: a word beyond the stamp of word 0 */
	int seeded = packet == T || packet == R ? words : size >= 16;

	mdfio_pattern_init(&p, MDFIO_PATTERN_MD_WORKBENCH, packet, 7, 3, size);
	mdfio_pattern_init(&other, MDFIO_PATTERN_MD_WORKBENCH, packet, 8, 3, size);
	mdfio_pattern_write(&p, obj, &held, 2, 1, 40);
	CHECK(!mdfio_pattern_check(&p, obj, 2, 1, 40), "%c size %zu: own object refused",
	      packet_name[packet], size);
	CHECK(mdfio_pattern_check(&p, obj, 3, 1, 40) == words, "%c size %zu: other rank",
	      packet_name[packet], size);
	CHECK(mdfio_pattern_check(&other, obj, 2, 1, 40) == seeded, "%c size %zu: other seed",
	      packet_name[packet], size);
	CHECK(mdfio_pattern_check(&p, obj, 2, 1, 41) == (words && packet != T),
	      "%c size %zu: other index", packet_name[packet], size);
	CHECK(mdfio_pattern_check(&p, obj, 2, 2, 40) == (words && packet != T),
	      "%c size %zu: other dataset", packet_name[packet], size);
	for (i = 0; i < size; i += step) {
		obj[i] ^= 0x10;
		CHECK(mdfio_pattern_check(&p, obj, 2, 1, 40), "%c size %zu: byte %zu flipped, accepted",
		      packet_name[packet], size, i);
		obj[i] ^= 0x10;
	}
	obj[size - 1] ^= 1;
	CHECK(mdfio_pattern_check(&p, obj, 2, 1, 40), "%c size %zu: last byte", packet_name[packet], size);
	mdfio_pattern_free(&p);
	mdfio_pattern_free(&other);
	free(obj);
}

static void test_refusals(void)
{
	int packet;
	size_t z;

	for (packet = T; packet <= R; packet++)
		for (z = 0; z < NSIZES; z++)
			test_refusals_one(packet, sizes[z]);
}

/* md-workbench's "incompressible" packets repeat one word: the stamps and
 * md-workbench's own loop say so, not a choice of mdfio's */
static void test_incompressible_repeats(void)
{
	struct mdfio_pattern p;
	uint8_t obj[4104];
	uint64_t held = MDFIO_PATTERN_FRESH;

	mdfio_pattern_init(&p, MDFIO_PATTERN_MD_WORKBENCH, I, 7, 1, sizeof(obj));
	mdfio_pattern_write(&p, obj, &held, 0, 0, 9);
	CHECK(!memcmp(obj + 8, obj + 16, 8) && !memcmp(obj + 8, obj + 4088, 8),
	      "i: the words between the stamps differ");
	CHECK(memcmp(obj, obj + 8, 8), "i: no stamp in word 0");
	mdfio_pattern_free(&p);
}

static void test_mdfio_one(size_t s)
{
	struct mdfio_pattern p;
	uint8_t *obj = malloc(s), *again = malloc(s);
	uint64_t held = MDFIO_PATTERN_FRESH, h = MDFIO_PATTERN_FRESH;
	size_t zeros = 0, i;

	mdfio_pattern_init(&p, MDFIO_PATTERN_MDFIO, T, 0, 10, s);
	mdfio_pattern_write(&p, obj, &held, 3, 7, 123456789012ull);
	mdfio_pattern_write(&p, again, &h, 3, 7, 123456789012ull);
	CHECK(!memcmp(obj, again, s), "size %zu: the object differs between calls", s);
	for (i = MDFIO_HEADER_SIZE; i < s; i++)
		zeros += !obj[i];
	CHECK(zeros <= s / 64, "size %zu: the filler is mostly zeros (%zu)", s, zeros);
	if (s >= 8)
		CHECK(!memcmp(obj, "mdfioob1", 8), "size %zu: no magic", s);
	CHECK(!mdfio_pattern_check(&p, obj, 3, 7, 123456789012ull), "size %zu: own object refused", s);
	if (s >= 9)
		CHECK(mdfio_pattern_check(&p, obj, 4, 7, 123456789012ull), "size %zu: wrong rank accepted", s);
	if (s >= 24) {
		CHECK(mdfio_pattern_check(&p, obj, 3, 8, 123456789012ull), "size %zu: wrong dataset accepted", s);
		CHECK(mdfio_pattern_check(&p, obj, 3, 7, 123456789013ull), "size %zu: wrong index accepted", s);
	}
	if (s > MDFIO_HEADER_SIZE) {
		obj[s - 1] ^= 1;
		CHECK(mdfio_pattern_check(&p, obj, 3, 7, 123456789012ull), "size %zu: damaged filler accepted", s);
	}
	mdfio_pattern_free(&p);
	free(obj);
	free(again);
}

static void test_mdfio(void)
{
	size_t z;

	for (z = 0; z < NSIZES; z++)
		test_mdfio_one(sizes[z]);
}

static void test_parse(void)
{
	CHECK(mdfio_pattern_kind_parse("md-workbench") == MDFIO_PATTERN_MD_WORKBENCH, "md-workbench");
	CHECK(mdfio_pattern_kind_parse("mdfio") == MDFIO_PATTERN_MDFIO, "mdfio");
	CHECK(mdfio_pattern_kind_parse("ior") < 0 && mdfio_pattern_kind_parse("") < 0, "bad kind");
	CHECK(mdfio_packet_parse("t") == T && mdfio_packet_parse("timestamp") == T, "t");
	CHECK(mdfio_packet_parse("o") == O && mdfio_packet_parse("offset") == O, "o");
	CHECK(mdfio_packet_parse("i") == I && mdfio_packet_parse("incompressible") == I, "i");
	CHECK(mdfio_packet_parse("r") == R && mdfio_packet_parse("random") == R, "r");
	CHECK(mdfio_packet_parse("") < 0 && mdfio_packet_parse("x") < 0 &&
	      mdfio_packet_parse("tomato") < 0 && mdfio_packet_parse("T") < 0, "bad packet");
}

int main(void)
{
	test_rand_r();
	test_model();
	test_recorded();
	test_reuse();
	test_refusals();
	test_incompressible_repeats();
	test_mdfio();
	test_parse();
	return check_result();
}
