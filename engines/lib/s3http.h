/* mdfio-s3's HTTP, through libcurl: the client of one bucket (endpoint,
 * credentials, signing, the signed headers), the URLs of its datasets,
 * keys and listings, a curl handle set up for one request, a store's
 * blocking request, and what a request's end means (an errno value) and
 * says (its status and S3 Code, nothing else of a body). No fio: the
 * messages are the caller's to print. */
#ifndef MDFIO_S3HTTP_H
#define MDFIO_S3HTTP_H

#include <curl/curl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "awsconf.h"
#include "s3wire.h"

/* a listing's page, and the most of an error body kept to find its Code */
#define MDFIO_S3_LIST_PAGE 1000
#define MDFIO_S3_ERRBODY_MAX 2048
/* a listing's response: a page of keys, each well under 1 KiB */
#define MDFIO_S3_LISTBODY_MAX (8u << 20)
/* room for one line of a message: a path of directory= and two of bucket=
 * and prefix= */
#define MDFIO_S3_LINE_MAX (PATH_MAX + 2 * (MDFIO_S3_BUCKET_MAX + MDFIO_S3_PREFIX_MAX) + 256)
/* the marker of a dataset that is a bucket of its own */
#define MDFIO_S3_BUCKET_MARKER ".mdfio-dataset"

/* Where a response's body goes: into buf, up to cap bytes (more if grow,
 * up to max), counting all of it in total. */
struct mdfio_s3_sink {
	char *buf;
	size_t cap, len, total, max;
	int grow;
};

struct mdfio_s3_client {
	struct mdfio_aws aws;
	char sigv4[MDFIO_AWS_KEY_MAX + 32];	/* "aws:amz:<region>:s3" */
	char *base;	/* the bucket's URL: .../bucket or //bucket.host... */
	char *where;	/* s3://<bucket>[/<prefix>], for messages */
	char prefix[MDFIO_S3_PREFIX_MAX + 2];	/* "" or ending in '/' */
	const char *bucket, *endpoint;
	int virtual_host;
	unsigned int stall_s;	/* stall_timeout= */
	/* datasets are buckets <bucket>-<rank>-<d>, each marked by the key
	 * MDFIO_S3_BUCKET_MARKER, their objects keys file-<i> */
	int per_bucket;
	unsigned int datasets;	/* datasets= of the namespace, per rank */
	/* the requests' signed headers: plain, a create's, a marker's */
	struct curl_slist *hdr, *hdr_put;
	CURL *easy;	/* the store's requests */
	/* the namespace's claim (s3claim.h): its URL and what it holds;
	 * whether this job's phase may delete it once no dataset is left */
	char *claim_url, *claim;
	int claim_may_go;
	/* the If-None-Match check's key, kept until the claim is made
	 * (s3claim.h), or NULL */
	char *check_url;
	char errbody[MDFIO_S3_ERRBODY_MAX];
	int global;	/* curl_global_init done */
};

enum mdfio_s3_method { MDFIO_S3_HEAD, MDFIO_S3_GET, MDFIO_S3_PUT, MDFIO_S3_DELETE };
extern const char *const mdfio_s3_method_names[];

/* The signed headers of every request (put: of a PUT, which makes a key
 * that must not exist), or NULL without memory. */
struct curl_slist *mdfio_s3_headers(const struct mdfio_s3_client *c, int put);
/* Frees c and all it holds, leaving no copy of the keys in freed memory. */
void mdfio_s3_client_free(struct mdfio_s3_client *c);

/* The bucket's URL: endpoint/bucket (path), or the bucket as the first
 * label of the endpoint's host (virtual); NULL without memory. */
char *mdfio_s3_bucket_url(const char *endpoint, const char *bucket, int virtual_host);
/* The URL that a dataset's keys follow after a '/' into out (len bytes). */
void mdfio_s3_dataset_url(const struct mdfio_s3_client *c, const char *dataset, char *out, size_t len);
/* Room for any dataset's URL and an object's name after it. */
size_t mdfio_s3_url_room(const struct mdfio_s3_client *c);
/* The URL of object name of dataset into a new string; name "" is the
 * dataset's marker. */
char *mdfio_s3_key_url(const struct mdfio_s3_client *c, const char *dataset, const char *name);
/* A ListObjectsV2 URL of up to max keys under key prefix p, from token
 * (NULL: the first page), as a new string. */
char *mdfio_s3_list_url(const char *base, const char *p, unsigned int max, const char *token);
/* The continuation token of a listing page that says it is truncated
 * (malloc'ed), or NULL after the last page. */
char *mdfio_s3_next_page(const struct mdfio_s3_sink *body);

/* Sets h up for one request: method m on url, with headers hdr, the
 * body (a PUT's) and sink for the response. */
void mdfio_s3_setup(const struct mdfio_s3_client *c, CURL *h, const char *url, enum mdfio_s3_method m,
		    struct curl_slist *hdr, const void *body, size_t len, struct mdfio_s3_sink *sink);
/* The errno value of a request's end: curl's result, then the status. */
int mdfio_s3_result_errno(CURLcode rc, long status);
/* Whether a request that ended so may succeed if sent again: a 5xx
 * status (503 SlowDown, 500 InternalError) or a connection cut. Not a
 * 4xx, which the same request meets again; not a refused connection
 * (the server is gone) nor a stall (each retry would wait as long). */
int mdfio_s3_retryable(CURLcode rc, long status);
/* The wait before retry number retry (1, 2, ...) of a request: capped
 * exponential backoff with full jitter, as the AWS SDKs wait, a draw
 * between 0 and min(cap, base * 2^(retry-1)). Servers answer SlowDown to
 * all their clients at once: the doubling gives the server room, the
 * draw keeps the ranks from coming back together, the cap bounds one
 * step's wait. seed: the caller's state of the draw. */
#define MDFIO_S3_BACKOFF_BASE_NS 100000000ull	/* 100 ms */
#define MDFIO_S3_BACKOFF_CAP_NS 20000000000ull	/* 20 s */
uint64_t mdfio_s3_backoff_ns(unsigned int retry, uint64_t *seed);
/* "HTTP 403 SignatureDoesNotMatch" or curl's words into out. */
const char *mdfio_s3_describe(char *out, size_t len, CURLcode rc, long status, const char *body,
			      size_t body_len);

/* A store request, synchronous: 0 or an errno value; *status the
 * status. The error body is kept in c->errbody (len in *blen), a
 * listing's body in sink (if given). */
int mdfio_s3_store_req_body(struct mdfio_s3_client *c, const char *url, enum mdfio_s3_method m,
			    struct curl_slist *hdr, const void *data, size_t data_len, struct mdfio_s3_sink *sink,
			    long *status, CURLcode *rcp, size_t *blen);
/* Whether the transfer just done on h opened a connection of its own.
 * libcurl sends a request again, by itself and on a new connection, when
 * the reused connection it went out on closed before any byte of the
 * answer: the server may have acted on the first copy, so a conditional
 * PUT's 412 on such a transfer may answer our own write. */
int mdfio_s3_opened_connection(CURL *h);
int mdfio_s3_store_req(struct mdfio_s3_client *c, const char *url, enum mdfio_s3_method m, struct curl_slist *hdr,
		       struct mdfio_s3_sink *sink, long *status, CURLcode *rcp, size_t *blen);
/* One line into out about a store request that failed for a reason the
 * core's errno value does not tell (not a missing or an existing key):
 * 1, or 0 when there is nothing to say. */
int mdfio_s3_store_failure(const struct mdfio_s3_client *c, enum mdfio_s3_method m, const char *what, CURLcode rc,
			   long status, size_t blen, char *out, size_t len);
/* A store request without a body to keep: 0 or an errno value, a failure
 * the errno value does not tell said in out (else out is ""). */
int mdfio_s3_store_call(struct mdfio_s3_client *c, const char *url, enum mdfio_s3_method m, char *out, size_t len);

#endif
