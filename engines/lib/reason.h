/* How the pure modules (status.c, rankfile.c, world.c) refuse: one line of
 * reason into the caller's buffer, which the core prints with the option or
 * file it concerns. */
#ifndef MDFIO_REASON_H
#define MDFIO_REASON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Writes the reason into msg; returns 1, so that a check can return it. */
static inline int mdfio_reason(char *msg, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline int mdfio_reason(char *msg, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
	return 1;
}

#endif
