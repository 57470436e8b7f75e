/* Object content: what a create writes and what verify_read checks, as a
 * function of the object (its owner rank, dataset and index), so that a
 * reader can verify any object without knowing who wrote it or when.
 *
 * Two patterns. md-workbench's (the default) is byte for byte what IOR's
 * md-workbench writes with the same -G seed and --dataPacketType, so each
 * program verifies the other's objects; docs/engines.md gives its formula.
 * mdfio's own starts with a header naming rank, dataset and index, so that
 * it tells every object apart (md-workbench's t packets name no object). */
#ifndef MDFIO_PATTERN_H
#define MDFIO_PATTERN_H

#include <stddef.h>
#include <stdint.h>

enum mdfio_pattern_kind { MDFIO_PATTERN_MD_WORKBENCH, MDFIO_PATTERN_MDFIO };

/* md-workbench's --dataPacketType */
enum mdfio_packet {
	MDFIO_PACKET_TIMESTAMP,		/* t: its default */
	MDFIO_PACKET_OFFSET,		/* o */
	MDFIO_PACKET_INCOMPRESSIBLE,	/* i */
	MDFIO_PACKET_RANDOM,		/* r */
};

/* mdfio's pattern: "mdfioob1", rank, dataset, index (little-endian) */
#define MDFIO_HEADER_SIZE 24

/* What a create buffer holds before its first object (see
 * mdfio_pattern_write). */
#define MDFIO_PATTERN_FRESH UINT64_MAX

struct mdfio_pattern {
	enum mdfio_pattern_kind kind;
	enum mdfio_packet packet;
	int32_t seed;		/* md-workbench -G */
	uint32_t datasets;	/* md-workbench's item is index * datasets + d */
	size_t size;
	uint8_t *filler;	/* mdfio's pattern: every object's bytes but
				 * the header */
	/* md-workbench's t, o and i: the objects of a rank differ only in
	 * stamps, so each rank's bytes are made once, into a slot of
	 * 2^slot_bits of size bytes (pattern.c) */
	uint8_t *templates;
	uint64_t *slot_rank;	/* whose bytes each slot holds */
	unsigned int slot_bits;
};

/* The pattern of objects of size bytes. 0, or -1 when out of memory. */
int mdfio_pattern_init(struct mdfio_pattern *p, enum mdfio_pattern_kind kind,
		       enum mdfio_packet packet, int32_t seed,
		       uint32_t datasets, size_t size);
void mdfio_pattern_free(struct mdfio_pattern *p);

/* Makes buf[0..size) object (rank, dataset, index). *held says what buf
 * holds already (MDFIO_PATTERN_FRESH for a new buffer) and is updated:
 * only the bytes that differ from the buffer's last object are written, so
 * a buffer must hold nothing but this pattern's objects. Updates the
 * templates, as mdfio_pattern_check. */
void mdfio_pattern_write(const struct mdfio_pattern *p, uint8_t *buf,
			 uint64_t *held, uint32_t rank, uint32_t dataset,
			 uint64_t index);

/* 0 if buf[0..size) is exactly object (rank, dataset, index); 1 otherwise.
 * Updates the templates (not thread-safe: one pattern per job). */
int mdfio_pattern_check(const struct mdfio_pattern *p, const uint8_t *buf,
			uint32_t rank, uint32_t dataset, uint64_t index);

/* Option values: "md-workbench" or "mdfio"; "t", "o", "i", "r" or their
 * long names, as md-workbench's --dataPacketType. -1 if s is neither. */
int mdfio_pattern_kind_parse(const char *s);
int mdfio_packet_parse(const char *s);

/* glibc's rand_r(), which md-workbench's i and r packets draw from: the same
 * numbers on every C library and host. */
uint32_t mdfio_glibc_rand_r(uint32_t *state);

#endif
