/* Object content. Every object starts with a header naming its owner rank,
 * dataset and index; the rest is a fixed filler, the same in every process
 * and every invocation, so a reader can verify any object without knowing
 * who wrote it or when (md-workbench's IO500#48 class of mismatch). */
#ifndef MDFIO_PATTERN_H
#define MDFIO_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#define MDFIO_HEADER_SIZE 24

/* Fills buf with the filler bytes. Done once per job, not per object. */
void mdfio_pattern_fill(uint8_t *buf, size_t size);

/* Writes the header of object (rank, dataset, index) over the first
 * min(size, MDFIO_HEADER_SIZE) bytes of buf. */
void mdfio_pattern_stamp(uint8_t *buf, size_t size, uint32_t rank,
			 uint32_t dataset, uint64_t index);

/* 0 if buf holds exactly object (rank, dataset, index) of this size, given
 * ref holding the filler (from mdfio_pattern_fill); 1 otherwise. */
int mdfio_pattern_check(const uint8_t *buf, const uint8_t *ref, size_t size,
			uint32_t rank, uint32_t dataset, uint64_t index);

#endif
