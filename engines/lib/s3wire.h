/* What an S3 client writes and reads besides the objects: names it may
 * use, query values percent-encoded, the elements of a response's XML (a
 * listing's keys and continuation token), an error's Code, and the errno
 * value of a status. Text only: no HTTP. */
#ifndef MDFIO_S3WIRE_H
#define MDFIO_S3WIRE_H

#include <stddef.h>

#define MDFIO_S3_BUCKET_MAX 63
#define MDFIO_S3_PREFIX_MAX 512
#define MDFIO_S3_CODE_MAX 64

/* 3 to 63 of a-z, 0-9, '-' and '.' */
int mdfio_s3_valid_bucket(const char *b);
/* Up to MDFIO_S3_PREFIX_MAX of A-Z, a-z, 0-9, '-', '_', '.' and '/', not
 * starting with '/' nor holding "//": the characters mdfio's own names
 * use, which every S3 server takes unencoded in a path (and libcurl 7.88
 * signs a path as written). */
int mdfio_s3_valid_prefix(const char *p);

/* s percent-encoded (all but A-Z a-z 0-9 - _ . ~) into out, which has room
 * for 3 * strlen(s) + 1 bytes. */
void mdfio_s3_encode(char *out, const char *s);

/* The text of the first <tag> element in body[0..len) as a new string,
 * the XML entities undone; NULL if there is none (or no memory). *next,
 * if given, is where a search for the next one starts. */
char *mdfio_s3_element(const char *body, size_t len, const char *tag, const char **next);

/* The Code element of an error body into out (MDFIO_S3_CODE_MAX + 1
 * bytes): its leading letters and digits only, so that nothing else of a
 * body is ever printed; "" if there is none. */
void mdfio_s3_code(const char *body, size_t len, char *out);

/* Whether s is head, a rank, sep, a dataset index and then end (0: the
 * string's end), as a dataset's prefix <prefix><r>_<d>/ or bucket
 * <bucket>-<r>-<d> is named: 1 with the two numbers in *rank and *d, or
 * 0. */
int mdfio_s3_dataset_named(const char *s, const char *head, char sep, char end, unsigned long *rank,
			   unsigned long *d);

/* The value of the line "<name>=<value>" of a claim's text body[0..len)
 * into out (len bytes, cut to fit): printable ASCII only, any other byte
 * '?', so that a key someone else wrote prints as one line; "" if there
 * is no such line. */
void mdfio_s3_claim_field(const char *body, size_t len, const char *name, char *out, size_t out_len);

/* The errno value of an HTTP status: 0 for 2xx. */
int mdfio_s3_status_errno(long status);

#endif
