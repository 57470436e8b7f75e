/* mdfio-s3: the md-workbench cycle against an S3 object store, through
 * libcurl, whose requests it signs (AWS Signature Version 4).
 *
 * Its datasets are key prefixes in one bucket (bucket=, required), as in
 * IOR's md-workbench S3 backend: object file-<i> of dataset <rank>_<d> is
 * the key <prefix><rank>_<d>/file-<i>. A stat is a HEAD of the key, a read
 * a GET of the whole object (a shorter one is EIO), a delete a DELETE and a
 * create a PUT of bs bytes. A dataset is marked by the empty key
 * <prefix><rank>_<d>/ (a trailing slash: on a server that keeps objects as
 * files a plain key would be a file that blocks every key beneath it),
 * made with If-None-Match: *, so that making it where it exists fails, as
 * mkdir does; a dataset goes (its marker deleted) only once a listing
 * finds no other key under it. With bucket_per_dataset=1 a dataset is
 * instead a bucket <bucket>-<rank>-<d> of its own, marked by the key
 * BUCKET_MARKER, its objects keys file-<i>. A run's coordination, the
 * status and rank files and their lock, stays in directory=
 * (docs/design.md).
 *
 * Up to iodepth units are in flight, each unit's request on a handle of
 * its own in one curl multi handle, whose connections they all reuse.
 * The store's requests (markers, listings) are synchronous, on a handle of
 * the store's.
 *
 * Credentials come from the environment or the AWS shared files, never
 * from an option (awsconf.h), so that no secret enters a jobfile or fio's
 * output. Nothing of a response but its status and its <Code> element is
 * ever printed: S3 error bodies may echo the canonical request, which holds
 * the session token.
 *
 * libcurl 7.88 signs what it is given, and no more: it adds no
 * x-amz-content-sha256 header (so every request carries
 * UNSIGNED-PAYLOAD), and signs the query string as written (so every
 * query here is written sorted and percent-encoded). A create is a PUT of
 * POSTFIELDS, not an upload from a callback, after which 7.88 would wait
 * for "100 Continue" on every object; its Content-Type is set, or curl
 * would send a form's. */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "awsconf.h"
#include "backend.h"
#include "s3wire.h"

/* a listing's page, and the most of an error body kept to find its Code */
#define S3_LIST_PAGE 1000
#define S3_ERRBODY_MAX 2048
/* a listing's response: a page of keys, each well under 1 KiB */
#define S3_LISTBODY_MAX (8u << 20)
/* the marker of a dataset that is a bucket of its own */
#define BUCKET_MARKER ".mdfio-dataset"

struct s3_options {
	struct mdfio_options core;
	char *bucket, *prefix, *endpoint, *region, *profile, *addressing, *ca_bundle;
	unsigned int bucket_per_dataset;
	unsigned int stall_timeout;	/* seconds */
	/* not an option: the client the store opened, for the backend's
	 * init (both run in the job's process, the store first) */
	struct s3_client *client;
};

/* Where a response's body goes: into buf, up to cap bytes (more if grow,
 * up to max), counting all of it in total. */
struct sink {
	char *buf;
	size_t cap, len, total, max;
	int grow;
};

struct s3_client {
	struct mdfio_aws aws;
	char sigv4[MDFIO_AWS_KEY_MAX + 32];	/* "aws:amz:<region>:s3" */
	char *base;	/* the bucket's URL: .../bucket or //bucket.host... */
	char *where;	/* s3://<bucket>[/<prefix>], for messages */
	char prefix[MDFIO_S3_PREFIX_MAX + 2];	/* "" or ending in '/' */
	const char *bucket, *endpoint;
	int virtual_host;
	unsigned int stall_s;	/* stall_timeout= */
	/* datasets are buckets <bucket>-<rank>-<d>, each marked by the key
	 * BUCKET_MARKER, their objects keys file-<i> */
	int per_bucket;
	/* the requests' signed headers: plain, a create's, a marker's */
	struct curl_slist *hdr, *hdr_put;
	CURL *easy;	/* the store's requests */
	/* the namespace's claim: its URL and what it holds; whether this
	 * job's phase may delete it once no dataset is left */
	char *claim_url, *claim;
	int claim_may_go;
	char errbody[S3_ERRBODY_MAX];
	int global;	/* curl_global_init done */
};

enum method { M_HEAD, M_GET, M_PUT, M_DELETE };
static const char *const method_names[] = { "HEAD", "GET", "PUT", "DELETE" };

/* ---------------------------------------------------------------- HTTP */

static size_t sink_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct sink *s = arg;
	size_t n = size * nmemb, room;

	s->total += n;
	if (s->grow && s->len + n > s->cap && s->len + n <= s->max) {
		size_t cap = s->cap ? s->cap : 4096;
		char *b;

		while (cap < s->len + n)
			cap *= 2;
		b = realloc(s->buf, cap + 1);
		if (!b)
			return 0;	/* curl fails the request: CURLE_WRITE_ERROR */
		s->buf = b;
		s->cap = cap;
	}
	room = s->cap - s->len;
	if (n < room)
		room = n;
	if (room) {
		memcpy(s->buf + s->len, data, room);
		s->len += room;
	}
	return n;
}

/* Sets h up for one request: method m on url, with headers hdr, the
 * body (a PUT's) and sink for the response. */
static void setup(const struct s3_client *c, CURL *h, const char *url, enum method m,
		  struct curl_slist *hdr, const void *body, size_t len, struct sink *sink)
{
	/* a reset keeps the handle's connections */
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_AWS_SIGV4, c->sigv4);
	curl_easy_setopt(h, CURLOPT_USERNAME, c->aws.access_key);
	curl_easy_setopt(h, CURLOPT_PASSWORD, c->aws.secret_key);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)c->stall_s);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, (long)c->stall_s);
	if (c->aws.ca_bundle[0])
		curl_easy_setopt(h, CURLOPT_CAINFO, c->aws.ca_bundle);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, sink);
	switch (m) {
	case M_HEAD:
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
		break;
	case M_GET:
		break;
	case M_PUT:
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, len ? body : "");
		break;
	case M_DELETE:
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
		break;
	}
}

/* The errno value of a request's end: curl's result, then the status. */
static int result_errno(CURLcode rc, long status)
{
	switch (rc) {
	case CURLE_OK:
		break;
	case CURLE_COULDNT_CONNECT:
		return ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
		return EHOSTUNREACH;
	case CURLE_OPERATION_TIMEDOUT:
		return ETIMEDOUT;
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
		return ECONNRESET;	/* the connection was cut */
	case CURLE_OUT_OF_MEMORY:
		return ENOMEM;
	default:
		return EIO;
	}
	return mdfio_s3_status_errno(status);
}

/* "HTTP 403 SignatureDoesNotMatch" or curl's words: the status and the
 * Code element of an error body, nothing else of it. */
static const char *describe(char *out, size_t len, CURLcode rc, long status,
			    const char *body, size_t body_len)
{
	char code[MDFIO_S3_CODE_MAX + 1];

	if (rc != CURLE_OK) {
		snprintf(out, len, "%s", curl_easy_strerror(rc));
		return out;
	}
	mdfio_s3_code(body, body_len, code);
	snprintf(out, len, "HTTP %ld%s%s", status, code[0] ? " " : "", code);
	return out;
}

/* A store request, synchronous: 0 or an errno value; *status the
 * status. The error body is kept in c->errbody (len in *blen), a
 * listing's body in sink (if given). */
static int store_req_body(struct s3_client *c, const char *url, enum method m, struct curl_slist *hdr,
			  const void *data, size_t data_len, struct sink *sink, long *status, CURLcode *rcp,
			  size_t *blen)
{
	struct sink err = { c->errbody, sizeof(c->errbody), 0, 0, 0, 0 };
	CURLcode rc;

	setup(c, c->easy, url, m, hdr, data, data_len, sink ? sink : &err);
	rc = curl_easy_perform(c->easy);
	*status = 0;
	curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, status);
	if (rcp)
		*rcp = rc;
	if (blen)
		*blen = sink ? 0 : err.len;
	if (sink && rc == CURLE_OK && (*status < 200 || *status >= 300) && blen) {
		/* the error body went to the listing's sink */
		size_t n = sink->len < sizeof(c->errbody) ? sink->len : sizeof(c->errbody);

		memcpy(c->errbody, sink->buf, n);
		*blen = n;
	}
	return result_errno(rc, *status);
}

static int store_req(struct s3_client *c, const char *url, enum method m, struct curl_slist *hdr,
		     struct sink *sink, long *status, CURLcode *rcp, size_t *blen)
{
	return store_req_body(c, url, m, hdr, NULL, 0, sink, status, rcp, blen);
}

/* ------------------------------------------------------------------ URLs */

static char *bucket_url(const char *endpoint, const char *bucket, int virtual_host);

/* The URL that a dataset's keys follow after a '/': its prefix in the
 * bucket, or the bucket <bucket>-<rank>-<d> of its own (a bucket name
 * takes no '_'), into out (len bytes). */
static void dataset_url(const struct s3_client *c, const char *dataset, char *out, size_t len)
{
	if (c->per_bucket) {
		char name[MDFIO_S3_BUCKET_MAX + MDFIO_DATASET_NAME_MAX + 2], *u, *us;

		snprintf(name, sizeof(name), "%s-%s", c->bucket, dataset);
		us = strchr(name, '_');
		if (us)
			*us = '-';
		u = bucket_url(c->endpoint, name, c->virtual_host);
		snprintf(out, len, "%s", u ? u : "");
		free(u);
	} else {
		snprintf(out, len, "%s/%s%s", c->base, c->prefix, dataset);
	}
}

/* Room for any dataset's URL and an object's name after it. */
static size_t url_room(const struct s3_client *c)
{
	return strlen(c->base) + strlen(c->prefix) + strlen(c->bucket) + 2 * MDFIO_DATASET_NAME_MAX +
	       MDFIO_OBJECT_NAME_MAX + sizeof(BUCKET_MARKER) + 8;
}

/* The URL of object name of dataset into a new string; name "" is the
 * dataset's marker. */
static char *key_url(const struct s3_client *c, const char *dataset, const char *name)
{
	size_t n = url_room(c);
	char *u = malloc(n);

	if (u) {
		dataset_url(c, dataset, u, n);
		snprintf(u + strlen(u), n - strlen(u), "/%s", !name[0] && c->per_bucket ? BUCKET_MARKER : name);
	}
	return u;
}

/* A ListObjectsV2 URL of up to max keys under key prefix p, from token
 * (NULL: the first page). The query is written sorted and encoded, as
 * libcurl 7.88 signs it as written. */
static char *list_url(const char *base, const char *p, unsigned int max, const char *token)
{
	size_t n = strlen(base) + 3 * strlen(p) + (token ? 3 * strlen(token) : 0) + 96;
	char *u = malloc(n), *ep = malloc(3 * strlen(p) + 1), *et = malloc(token ? 3 * strlen(token) + 1 : 1);

	if (u && ep && et) {
		mdfio_s3_encode(ep, p);
		if (token)
			mdfio_s3_encode(et, token);
		snprintf(u, n, "%s?%s%s%slist-type=2&max-keys=%u&prefix=%s", base,
			 token ? "continuation-token=" : "", token ? et : "", token ? "&" : "", max, ep);
	} else {
		free(u);
		u = NULL;
	}
	free(ep);
	free(et);
	return u;
}

/* ------------------------------------------------------------- the store */

struct s3_listing {
	struct s3_client *c;
	char *dataset;		/* "<rank>_<d>" */
	char **names;		/* the keys under it, less "<prefix><ds>/" */
	size_t n, cap, pos;
	int failed;
};

static void listing_clear(struct s3_listing *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->names[i]);
	l->n = l->pos = 0;
}

/* One line about a store request that failed for a reason the core's
 * errno value does not tell (not a missing or an existing key). */
static void store_failed(const struct s3_client *c, enum method m, const char *what,
			 CURLcode rc, long status, size_t blen)
{
	char d[128];

	if (rc == CURLE_OK && (status == 404 || status == 412))
		return;
	mdfio_error("%s %s: %s", method_names[m], what,
		    describe(d, sizeof(d), rc, status, c->errbody, blen));
}

/* A store request without a body to keep: 0 or an errno value, a failure
 * the errno value does not tell said in one line. */
static int store_call(struct s3_client *c, const char *url, enum method m)
{
	long status;
	CURLcode rc;
	size_t blen;
	int err = store_req(c, url, m, c->hdr, NULL, &status, &rc, &blen);

	if (err)
		store_failed(c, m, c->where, rc, status, blen);
	return err;
}

/* The continuation token of a listing page that says it is truncated
 * (malloc'ed), or NULL after the last page. */
static char *next_page(const struct sink *body)
{
	char *truncated, *next = NULL;

	if (!body->buf)
		return NULL;
	truncated = mdfio_s3_element(body->buf, body->len, "IsTruncated", NULL);
	if (truncated && !strcmp(truncated, "true"))
		next = mdfio_s3_element(body->buf, body->len, "NextContinuationToken", NULL);
	free(truncated);
	return next;
}

/* Fills l with every key of the dataset but its marker (up to max if not
 * 0): those under "<prefix><dataset>/", or in the dataset's bucket. 0 or
 * an errno value. */
static int list_keys(struct s3_listing *l, size_t max)
{
	struct s3_client *c = l->c;
	size_t plen = c->per_bucket ? 0 : strlen(c->prefix) + strlen(l->dataset) + 1;
	char *p = malloc(plen + 1), *token = NULL, *base = malloc(url_room(c));
	struct sink body = { NULL, 0, 0, 0, S3_LISTBODY_MAX, 1 };
	int err = 0;

	if (!p || !base) {
		free(p);
		free(base);
		return ENOMEM;
	}
	if (c->per_bucket) {
		dataset_url(c, l->dataset, base, url_room(c));
		p[0] = 0;
	} else {
		snprintf(base, url_room(c), "%s", c->base);
		snprintf(p, plen + 1, "%s%s/", c->prefix, l->dataset);
	}
	listing_clear(l);
	for (;;) {
		char *url = list_url(base, p, max ? (unsigned int)max : S3_LIST_PAGE, token), *key;
		const char *at;
		long status;
		CURLcode rc;
		size_t blen;

		if (!url) {
			err = ENOMEM;
			break;
		}
		body.len = body.total = 0;
		err = store_req(c, url, M_GET, c->hdr, &body, &status, &rc, &blen);
		free(url);
		if (err) {
			store_failed(c, M_GET, c->where, rc, status, blen);
			break;
		}
		at = body.buf;
		while (body.buf && (key = mdfio_s3_element(at, body.len - (size_t)(at - body.buf), "Key", &at))) {
			if (strncmp(key, p, plen) || !key[plen] || (c->per_bucket && !strcmp(key, BUCKET_MARKER))) {
				free(key);	/* the marker itself */
				continue;
			}
			if (l->n == l->cap) {
				size_t cap = l->cap ? 2 * l->cap : 64;
				char **names = realloc(l->names, cap * sizeof(*names));

				if (!names) {
					free(key);
					err = ENOMEM;
					break;
				}
				l->names = names;
				l->cap = cap;
			}
			memmove(key, key + plen, strlen(key + plen) + 1);
			l->names[l->n++] = key;
		}
		if (err || max)
			break;
		free(token);
		token = next_page(&body);
		if (!token)
			break;
	}
	free(token);
	free(body.buf);
	free(p);
	free(base);
	return err;
}

/* Whether the bucket of dataset name exists: 1, 0, or minus an errno
 * value. */
static int bucket_there(struct s3_client *c, const char *name)
{
	char *url = malloc(url_room(c));
	long status;
	CURLcode rc;
	size_t blen;
	int err;

	if (!url)
		return -ENOMEM;
	dataset_url(c, name, url, url_room(c));
	err = store_req(c, url, M_HEAD, c->hdr, NULL, &status, &rc, &blen);
	free(url);
	if (err && err != ENOENT)
		store_failed(c, M_HEAD, c->where, rc, status, blen);
	return !err ? 1 : err == ENOENT ? 0 : -err;
}

/* A bucket request on dataset name's bucket (PUT: create, DELETE: remove):
 * 0 or an errno value, EEXIST for a bucket that exists, ENOTEMPTY for one
 * that holds keys. */
static int bucket_req(struct s3_client *c, const char *name, enum method m)
{
	char *url = malloc(url_room(c));
	long status;
	CURLcode rc;
	size_t blen;
	int err;

	if (!url)
		return ENOMEM;
	dataset_url(c, name, url, url_room(c));
	err = store_req(c, url, m, c->hdr, NULL, &status, &rc, &blen);
	free(url);
	if (err && rc == CURLE_OK && status == 409)
		return m == M_PUT ? EEXIST : ENOTEMPTY;
	if (err)
		store_failed(c, m, c->where, rc, status, blen);
	return err;
}

/* What the marker of dataset name is: an enum mdfio_probe or minus an
 * errno value. */
static int s3_probe(void *state, const char *name, const char **what)
{
	struct s3_client *c = state;
	struct s3_listing l = { .c = c, .dataset = (char *)name };
	char *url = key_url(c, name, "");
	curl_off_t len = -1;
	long status;
	CURLcode rc;
	size_t blen;
	int err;

	*what = NULL;
	if (!url)
		return -ENOMEM;
	err = store_req(c, url, M_HEAD, c->hdr, NULL, &status, &rc, &blen);
	free(url);
	if (!err) {
		curl_easy_getinfo(c->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len);
		if (!len)
			return MDFIO_PROBE_DATASET;
		*what = "is not mdfio-s3's dataset marker (an empty object)";
		return MDFIO_PROBE_OTHER;
	}
	if (err != ENOENT) {
		store_failed(c, M_HEAD, c->where, rc, status, blen);
		return -err;
	}
	if (c->per_bucket) {
		/* a bucket of the name without the marker is not mdfio's */
		err = bucket_there(c, name);
		if (err < 0)
			return err;
		if (!err)
			return MDFIO_PROBE_ABSENT;
		*what = "is a bucket without mdfio-s3's dataset marker";
		return MDFIO_PROBE_OTHER;
	}
	/* keys under the prefix without a marker are not mdfio's: a
	 * precreate must not take the name */
	err = list_keys(&l, 1);
	if (!err && l.n)
		*what = "holds keys but no dataset marker";
	listing_clear(&l);
	free(l.names);
	if (err)
		return -err;
	return *what ? MDFIO_PROBE_OTHER : MDFIO_PROBE_ABSENT;
}

static int s3_make(void *state, const char *name)
{
	struct s3_client *c = state;
	char *url = key_url(c, name, "");
	long status;
	CURLcode rc;
	size_t blen;
	int err;

	if (!url)
		return ENOMEM;
	if (c->per_bucket) {
		/* creating a bucket one owns may succeed again (AWS's
		 * us-east-1): only a bucket that was not there is taken */
		err = bucket_there(c, name);
		if (!err)
			err = bucket_req(c, name, M_PUT);
		else
			err = err > 0 ? EEXIST : -err;
		if (err) {
			free(url);
			return err;
		}
	}
	err = store_req(c, url, M_PUT, c->hdr_put, NULL, &status, &rc, &blen);
	free(url);
	if (err)
		store_failed(c, M_PUT, c->where, rc, status, blen);
	return err;
}

static int s3_open_dataset(void *state, const char *name, int *handle)
{
	const char *what;
	int kind = s3_probe(state, name, &what);

	*handle = -1;
	if (kind < 0)
		return -kind;
	if (kind == MDFIO_PROBE_ABSENT)
		return ENOENT;
	if (kind != MDFIO_PROBE_DATASET)
		return ENOTDIR;
	*handle = 0;	/* requests name the dataset; no handle is needed */
	return 0;
}

static void s3_close_dataset(void *state, int handle)
{
	(void)state;
	(void)handle;
}

static void *s3_list(void *state, const char *name, int handle)
{
	struct s3_listing *l = calloc(1, sizeof(*l));

	(void)handle;
	if (!l)
		return NULL;
	l->c = state;
	l->dataset = strdup(name);
	if (!l->dataset || list_keys(l, 0)) {
		listing_clear(l);
		free(l->names);
		free(l->dataset);
		free(l);
		return NULL;
	}
	return l;
}

static const char *s3_next(void *listing)
{
	struct s3_listing *l = listing;

	return l->pos < l->n ? l->names[l->pos++] : NULL;
}

/* Every key is an object: S3 has no links, symlinks or special files. */
static int s3_listed_object(void *listing, const char *name)
{
	(void)listing;
	(void)name;
	return 1;
}

/* The recovery deletes what it listed, then lists again until a pass
 * finds nothing of its own: a rewind asks the store anew. */
static void s3_rewind(void *listing)
{
	struct s3_listing *l = listing;

	if (list_keys(l, 0))
		listing_clear(l);
}

static void s3_list_close(void *listing)
{
	struct s3_listing *l = listing;

	listing_clear(l);
	free(l->names);
	free(l->dataset);
	free(l);
}

/* The marker goes only with the last key under it, as rmdir removes only
 * an empty directory. */
static int s3_remove(void *state, const char *name)
{
	struct s3_client *c = state;
	struct s3_listing l = { .c = c, .dataset = (char *)name };
	const char *what;
	char *url;
	int err, kind = s3_probe(state, name, &what);

	if (kind < 0)
		return -kind;
	if (kind == MDFIO_PROBE_ABSENT)
		return ENOENT;
	if (kind != MDFIO_PROBE_DATASET)
		return ENOTDIR;
	err = list_keys(&l, 2);
	if (!err && l.n)
		err = ENOTEMPTY;
	listing_clear(&l);
	free(l.names);
	if (err)
		return err;
	url = key_url(c, name, "");
	if (!url)
		return ENOMEM;
	err = store_call(c, url, M_DELETE);
	free(url);
	if (!err && c->per_bucket)
		err = bucket_req(c, name, M_DELETE);
	return err;
}

static int s3_unlink(void *state, int handle, const char *dataset, const char *name)
{
	struct s3_client *c = state;
	char *url = key_url(c, dataset, name);
	int err;

	(void)handle;
	if (!url)
		return ENOMEM;
	err = store_call(c, url, M_DELETE);
	free(url);
	return err;
}

static void client_free(struct s3_client *c)
{
	if (c->easy)
		curl_easy_cleanup(c->easy);
	curl_slist_free_all(c->hdr);
	curl_slist_free_all(c->hdr_put);
	free(c->base);
	free(c->where);
	free(c->claim_url);
	free(c->claim);
	if (c->global)
		curl_global_cleanup();
	/* the keys leave no copy behind in freed memory */
	memset(&c->aws, 0, sizeof(c->aws));
	free(c);
}

/* The key that claims a namespace for one coordination directory, in
 * bucket= beside the datasets' prefixes (with bucket_per_dataset=1, at the
 * top of bucket=): a second run on the same bucket and prefix from
 * another directory= is refused by it, whatever its own status says. */
#define CLAIM_KEY ".mdfio-namespace"
#define CLAIM_KEY_BUCKETS ".mdfio-namespace-buckets"
#define CLAIM_MAX 8192

/* Whether s is head, digits, sep, digits and then end (0: the string's
 * end): a dataset's prefix or bucket name. */
static int dataset_named(const char *s, const char *head, char sep, char end)
{
	size_t n = strlen(head), k;
	int part;

	if (strncmp(s, head, n))
		return 0;
	s += n;
	for (part = 0; part < 2; part++) {
		for (k = 0; s[k] >= '0' && s[k] <= '9'; k++)
			;
		if (!k || s[k] != (part ? end : sep))
			return 0;
		s += k + 1;
	}
	return !end || !*s;
}

/* Whether a dataset of the namespace is left (any rank's): a key prefix
 * <prefix><r>_<d>/ in bucket= or a bucket <bucket>-<r>-<d>. 1, 0, or
 * minus an errno value. */
static int datasets_left(struct s3_client *c)
{
	size_t n = strlen(c->base) + strlen(c->endpoint) + 3 * strlen(c->prefix) + 3 * MDFIO_AWS_TEXT_MAX + 128;
	char *url = malloc(n), *ep = malloc(3 * strlen(c->prefix) + 1), *token = NULL, *head = malloc(n);
	struct sink body = { NULL, 0, 0, 0, S3_LISTBODY_MAX, 1 };
	int left = 0;

	if (!url || !ep || !head) {
		left = -ENOMEM;
		goto out;
	}
	mdfio_s3_encode(ep, c->prefix);
	snprintf(head, n, c->per_bucket ? "%s-" : "%s", c->per_bucket ? c->bucket : c->prefix);
	while (!left) {
		const char *at;
		char *item;
		long status;
		CURLcode rc;
		size_t blen;
		int err;

		if (c->per_bucket) {
			snprintf(url, n, "%s/", c->endpoint);	/* ListBuckets */
		} else {
			char et[3 * MDFIO_AWS_TEXT_MAX + 1] = "";

			if (token && strlen(token) < MDFIO_AWS_TEXT_MAX)
				mdfio_s3_encode(et, token);
			snprintf(url, n, "%s?%s%s%sdelimiter=%%2F&list-type=2&max-keys=%u&prefix=%s", c->base,
				 token ? "continuation-token=" : "", et, token ? "&" : "", S3_LIST_PAGE, ep);
		}
		body.len = body.total = 0;
		err = store_req(c, url, M_GET, c->hdr, &body, &status, &rc, &blen);
		if (err) {
			store_failed(c, M_GET, c->where, rc, status, blen);
			left = -err;
			break;
		}
		at = body.buf;
		while (!left && body.buf &&
		       (item = mdfio_s3_element(at, body.len - (size_t)(at - body.buf),
						c->per_bucket ? "Name" : "CommonPrefixes", &at))) {
			char *p = c->per_bucket ? NULL : mdfio_s3_element(item, strlen(item), "Prefix", NULL);

			left = c->per_bucket ? dataset_named(item, head, '-', 0) : p && dataset_named(p, head, '_', '/');
			free(p);
			free(item);
		}
		if (left || c->per_bucket)
			break;
		free(token);
		token = next_page(&body);
		if (!token)
			break;
	}
out:
	free(token);
	free(body.buf);
	free(url);
	free(ep);
	free(head);
	return left;
}

/* A precreate claims the namespace for its directory= (If-None-Match: *;
 * a claim that holds this directory is its own, made by another rank or
 * by a request libcurl sent again); every other phase refuses a claim
 * for another directory. Compared by the path of directory=, so every
 * host of a run must see it at one path. 0, or one line and 1. */
static int claim_namespace(struct s3_client *c, int root_fd, unsigned int phase)
{
	char link[64], dir[PATH_MAX], d[128];
	struct sink body = { NULL, 0, 0, 0, CLAIM_MAX, 1 };
	const char *key = c->per_bucket ? CLAIM_KEY_BUCKETS : CLAIM_KEY;
	long status = 0;
	CURLcode rc = CURLE_OK;
	size_t blen = 0, n;
	ssize_t len;
	int err, same;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", root_fd);
	len = readlink(link, dir, sizeof(dir) - 1);
	if (len < 0)
		return mdfio_error("directory=: cannot tell its path (%s), which %s%s of bucket %s names", strerror(errno),
				   c->prefix, key, c->bucket);
	dir[len] = 0;
	n = (size_t)len + 64;
	c->claim = malloc(n);
	c->claim_url = malloc(strlen(c->base) + strlen(c->prefix) + strlen(key) + 2);
	if (!c->claim || !c->claim_url)
		return mdfio_error("out of memory");
	snprintf(c->claim, n, "mdfio-s3 namespace; directory=%s\n", dir);
	sprintf(c->claim_url, "%s/%s%s", c->base, c->prefix, key);
	if (phase == MDFIO_PRECREATE + 1) {
		err = store_req_body(c, c->claim_url, M_PUT, c->hdr_put, c->claim, strlen(c->claim), NULL,
				     &status, &rc, &blen);
		c->claim_may_go = 1;
		if (!err)
			return 0;
		if (err != EEXIST)
			return mdfio_error("%s: cannot claim the namespace (key %s%s): %s", c->where, c->prefix, key,
					   describe(d, sizeof(d), rc, status, c->errbody, blen));
	}
	err = store_req(c, c->claim_url, M_GET, c->hdr, &body, &status, &rc, &blen);
	if (err == ENOENT) {
		/* none: the core's checks of the datasets decide */
		c->claim_may_go = phase == MDFIO_CLEANUP + 1;
		free(body.buf);
		return 0;
	}
	same = !err && body.total == strlen(c->claim) && body.len == body.total &&
	       !memcmp(body.buf, c->claim, body.len);
	free(body.buf);
	if (err)
		return mdfio_error("%s: cannot read the namespace's claim (key %s%s): %s", c->where, c->prefix, key,
				   describe(d, sizeof(d), rc, status, c->errbody, blen));
	if (!same)
		return mdfio_error("%s: the namespace is claimed by a run coordinated in another directory= than %s (key %s%s of bucket %s says which); refusing (nothing was touched)",
				   c->where, dir, c->prefix, key, c->bucket);
	c->claim_may_go = phase == MDFIO_CLEANUP + 1 || phase == MDFIO_PRECREATE + 1;
	return 0;
}

/* The claim goes with the namespace's last dataset: after a cleanup that
 * emptied it, or a precreate that was refused before it made any. */
static void s3_close(void *state)
{
	struct s3_client *c = state;

	if (c->claim_may_go && !datasets_left(c))
		store_call(c, c->claim_url, M_DELETE);
	client_free(c);
}

static struct curl_slist *headers(const struct s3_client *c, int put)
{
	char token[MDFIO_AWS_TOKEN_MAX + 32];
	struct curl_slist *l = NULL, *t;
	const char *lines[4];
	size_t n = 0, i;

	lines[n++] = "x-amz-content-sha256: UNSIGNED-PAYLOAD";
	if (put) {
		/* every PUT of mdfio's makes a key that must not exist */
		lines[n++] = "Content-Type: application/octet-stream";
		lines[n++] = "If-None-Match: *";
	}
	if (c->aws.session_token[0]) {
		snprintf(token, sizeof(token), "x-amz-security-token: %s", c->aws.session_token);
		lines[n++] = token;
	}
	for (i = 0; i < n; i++) {
		t = curl_slist_append(l, lines[i]);
		if (!t) {
			curl_slist_free_all(l);
			return NULL;
		}
		l = t;
	}
	return l;
}

/* The bucket's URL: endpoint/bucket (path), or the bucket as the first
 * label of the endpoint's host (virtual). */
static char *bucket_url(const char *endpoint, const char *bucket, int virtual_host)
{
	const char *host = strstr(endpoint, "://");
	size_t n = strlen(endpoint) + strlen(bucket) + 3;
	char *u = malloc(n);

	if (!u)
		return NULL;
	if (virtual_host)
		snprintf(u, n, "%.*s%s.%s", (int)(host + 3 - endpoint), endpoint, bucket, host + 3);
	else
		snprintf(u, n, "%s/%s", endpoint, bucket);
	return u;
}

static int s3_open(struct thread_data *td, int root_fd, void **state, const char **where)
{
	struct s3_options *o = td->eo;
	const struct mdfio_aws_options ao = { o->profile, o->region, o->endpoint, o->ca_bundle };
	struct s3_client *c;
	char err[MDFIO_AWS_TEXT_MAX + 256], d[128], *url;
	const char *pfx = o->prefix ? o->prefix : "", *host;
	int virtual_host = 0, e;
	size_t n, blen = 0;
	long status = 0;
	CURLcode rc = CURLE_OUT_OF_MEMORY;

	if (!o->bucket || !o->bucket[0])
		return mdfio_error("bucket= is required: the existing bucket mdfio-s3 keeps its datasets in");
	if (!mdfio_s3_valid_bucket(o->bucket))
		return mdfio_error("bucket=%s: expected 3 to 63 of a-z, 0-9, '-' and '.'", o->bucket);
	if (!mdfio_s3_valid_prefix(pfx))
		return mdfio_error("prefix=%s: expected up to %d of A-Z, a-z, 0-9, '-', '_', '.' and '/', not starting with '/' nor holding '//'",
				   pfx, MDFIO_S3_PREFIX_MAX);
	if (o->bucket_per_dataset && pfx[0])
		return mdfio_error("prefix=%s: bucket_per_dataset=1 keeps each dataset's objects at the top of a bucket of its own",
				   pfx);
	if (o->addressing && o->addressing[0] && strcmp(o->addressing, "path")) {
		if (strcmp(o->addressing, "virtual"))
			return mdfio_error("addressing=%s: expected path or virtual", o->addressing);
		virtual_host = 1;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return mdfio_error("out of memory");
	if (mdfio_aws_resolve(&c->aws, &ao, err, sizeof(err))) {
		client_free(c);
		return mdfio_error("%s", err);
	}
	n = strlen(c->aws.endpoint);
	while (n && c->aws.endpoint[n - 1] == '/')
		c->aws.endpoint[--n] = 0;
	host = strstr(c->aws.endpoint, "://");
	host = host ? host + 3 : c->aws.endpoint;
	if (memchr(host, '@', strcspn(host, "/"))) {
		/* a user and password in the URL would be printed with every
		 * line that names the endpoint, and sent in the clear: said
		 * without repeating it */
		client_free(c);
		return mdfio_error("endpoint: holds a user name or password (user:password@HOST): not taken; the keys come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or a profile");
	}
	if (strncmp(c->aws.endpoint, "http://", 7) && strncmp(c->aws.endpoint, "https://", 8)) {
		e = mdfio_error("endpoint %s: expected http://HOST[:PORT] or https://HOST[:PORT]", c->aws.endpoint);
		client_free(c);
		return e;
	}
	c->endpoint = c->aws.endpoint;
	c->bucket = o->bucket;
	c->virtual_host = virtual_host;
	c->stall_s = o->stall_timeout;
	c->per_bucket = (int)o->bucket_per_dataset;
	snprintf(c->prefix, sizeof(c->prefix), "%s%s", pfx, pfx[0] && pfx[strlen(pfx) - 1] != '/' ? "/" : "");
	snprintf(c->sigv4, sizeof(c->sigv4), "aws:amz:%s:s3", c->aws.region);
	n = strlen(o->bucket) + strlen(c->prefix) + 8;
	c->where = malloc(n);
	if (c->where) {
		snprintf(c->where, n, "s3://%s%s%s", o->bucket, c->prefix[0] ? "/" : "", c->prefix);
		if (c->prefix[0])
			c->where[strlen(c->where) - 1] = 0;	/* datasets go after a '/' */
	}
	c->base = bucket_url(c->endpoint, o->bucket, virtual_host);
	c->global = !curl_global_init(CURL_GLOBAL_DEFAULT);
	c->easy = c->global ? curl_easy_init() : NULL;
	c->hdr = headers(c, 0);
	c->hdr_put = headers(c, 1);
	if (!c->where || !c->base || !c->easy || !c->hdr || !c->hdr_put) {
		client_free(c);
		return mdfio_error("out of memory (or libcurl cannot start)");
	}
	/* one signed request before anything is made: the endpoint, TLS,
	 * the credentials and the bucket, in one line if any fails */
	url = list_url(c->base, c->prefix, 1, NULL);
	e = url ? store_req(c, url, M_GET, c->hdr, NULL, &status, &rc, &blen) : ENOMEM;
	free(url);
	if (e) {
		e = mdfio_error("endpoint %s, bucket %s: %s (credentials: %s, region %s)", c->endpoint, o->bucket,
				describe(d, sizeof(d), rc, status, c->errbody, blen), c->aws.credentials_from,
				c->aws.region);
		client_free(c);
		return e;
	}
	if (claim_namespace(c, root_fd, o->core.phase)) {
		client_free(c);
		return 1;
	}
	o->client = c;
	*state = c;
	*where = c->where;
	return 0;
}

static const struct mdfio_store s3_store = {
	.open = s3_open,
	.close = s3_close,
	.probe = s3_probe,
	.make = s3_make,
	.open_dataset = s3_open_dataset,
	.close_dataset = s3_close_dataset,
	.remove = s3_remove,
	.list = s3_list,
	.next = s3_next,
	.listed_object = s3_listed_object,
	.rewind = s3_rewind,
	.list_close = s3_list_close,
	.unlink = s3_unlink,
};

/* ------------------------------------------------------------ requests */

/* A unit's request and the handle that carries it. */
struct slot {
	struct mdfio_unit *u;
	CURL *h;
	int busy;		/* h is in the multi handle */
	char *url;		/* room for any object's URL */
	/* a read's object, else the error body (a failed read's error body
	 * lands in its object's buffer) */
	struct sink body;
	char errbody[S3_ERRBODY_MAX];
};

/* Up to iodepth units in flight on one multi handle, whose connections
 * every unit's handle shares and reuses (as mdfio-uring keeps them in one
 * ring). */
struct s3_queue {
	struct thread_data *td;
	struct s3_client *c;
	struct slot *slot;
	CURLM *multi;
	unsigned int n, in_flight;
	size_t url_len;
	int reported;		/* a failed request was described once */
};

static const enum method op_method[MDFIO_OP_NR] = {
	[MDFIO_OP_CREATE] = M_PUT, [MDFIO_OP_STAT] = M_HEAD,
	[MDFIO_OP_READ] = M_GET, [MDFIO_OP_DELETE] = M_DELETE,
};

static void prepare(struct s3_queue *q, struct slot *s)
{
	struct mdfio_req *r = &s->u->req;
	enum method m = op_method[r->op];

	dataset_url(q->c, r->dataset, s->url, q->url_len);
	snprintf(s->url + strlen(s->url), q->url_len - strlen(s->url), "/%s", r->name);
	if (m == M_GET)
		s->body = (struct sink){ r->buf, r->size, 0, 0, 0, 0 };
	else
		s->body = (struct sink){ s->errbody, sizeof(s->errbody), 0, 0, 0, 0 };
	/* a create never replaces a key: one that exists is EEXIST (412), as
	 * O_EXCL's, and the core then leaves it to whoever made it */
	setup(q->c, s->h, s->url, m, m == M_PUT ? q->c->hdr_put : q->c->hdr, r->buf, r->size, &s->body);
	curl_easy_setopt(s->h, CURLOPT_PRIVATE, s);
}

/* The end of slot s's request, curl's result rc, into its req. */
static void finish(struct s3_queue *q, struct slot *s, CURLcode rc)
{
	struct mdfio_req *r = &s->u->req;
	long status = 0;
	int err;

	curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
	err = result_errno(rc, status);
	if (!err && r->op == MDFIO_OP_STAT) {
		curl_off_t len = -1;

		curl_easy_getinfo(s->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len);
		r->st_size = len < 0 ? 0 : (uint64_t)len;
	} else if (!err && r->op == MDFIO_OP_READ && s->body.total < r->size) {
		err = EIO;	/* a short object, as a short read */
	}
	/* the first failure that the errno value does not explain */
	if (err && err != ENOENT && !q->reported) {
		char d[128];

		q->reported = 1;
		mdfio_error("%s %s/%s/%s: %s (only this first failed request is described; the rest are counted)",
			    method_names[op_method[r->op]], q->c->where, r->dataset, r->name,
			    describe(d, sizeof(d), rc, status, s->body.buf, s->body.len));
	}
	r->err = err;
}

/* The request goes out at the next commit or reap; its latency runs from
 * here to the reap that sees it end. */
static int s3_start(void *priv, struct mdfio_unit *u)
{
	struct s3_queue *q = priv;
	struct slot *s = &q->slot[u->index];

	prepare(q, s);
	u->req.t0 = mdfio_now();
	if (curl_multi_add_handle(q->multi, s->h) != CURLM_OK) {
		finish(q, s, CURLE_OUT_OF_MEMORY);
		return 1;
	}
	s->busy = 1;
	q->in_flight++;
	return 0;
}

static int s3_commit(void *priv)
{
	struct s3_queue *q = priv;
	int running;

	return curl_multi_perform(q->multi, &running) == CURLM_OK ? 0 : -EIO;
}

/* Ends every transfer curl has finished; how many units ended. A unit's
 * next request may start inside mdfio_req_done: it goes into the multi
 * handle at once and ends in a later round. */
static unsigned int reap_done(struct s3_queue *q)
{
	unsigned int ended = 0;
	uint64_t now = 0;
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(q->multi, &left))) {
		struct slot *s = NULL;
		CURL *h = msg->easy_handle;
		CURLcode rc = msg->data.result;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(h, CURLINFO_PRIVATE, (char **)&s);
		curl_multi_remove_handle(q->multi, h);
		s->busy = 0;
		q->in_flight--;
		finish(q, s, rc);
		/* one clock read for the transfers seen ending together */
		if (!now)
			now = mdfio_now();
		ended += (unsigned int)mdfio_req_done(q->td, s->u, now);
	}
	return ended;
}

static int s3_reap(void *priv, unsigned int min)
{
	struct s3_queue *q = priv;
	unsigned int ended = 0;
	int running;

	for (;;) {
		if (curl_multi_perform(q->multi, &running) != CURLM_OK)
			return -EIO;
		ended += reap_done(q);
		if (ended >= min || !q->in_flight)
			return 0;
		if (curl_multi_poll(q->multi, NULL, 0, 1000, NULL) != CURLM_OK)
			return -EIO;
	}
}

static void s3_exit(void *priv)
{
	struct s3_queue *q = priv;
	unsigned int i;

	for (i = 0; q->slot && i < q->n; i++) {
		if (q->slot[i].busy)
			curl_multi_remove_handle(q->multi, q->slot[i].h);
		if (q->slot[i].h)
			curl_easy_cleanup(q->slot[i].h);
		free(q->slot[i].url);
	}
	if (q->multi)
		curl_multi_cleanup(q->multi);
	free(q->slot);
	free(q);
}

static int s3_init(struct thread_data *td, int root_fd, struct mdfio_unit *units,
		   unsigned int n, void **priv)
{
	struct s3_options *o = td->eo;
	struct s3_queue *q = calloc(1, sizeof(*q));
	unsigned int i;

	(void)root_fd;
	if (!q)
		return mdfio_error("out of memory");
	*priv = q;
	q->td = td;
	q->c = o->client;
	q->n = n;
	q->url_len = url_room(q->c);
	q->slot = calloc(n, sizeof(*q->slot));
	q->multi = curl_multi_init();
	if (!q->slot || !q->multi)
		return mdfio_error("out of memory for iodepth=%u", n);
	for (i = 0; i < n; i++) {
		q->slot[i].u = &units[i];
		q->slot[i].h = curl_easy_init();
		q->slot[i].url = malloc(q->url_len);
		if (!q->slot[i].h || !q->slot[i].url)
			return mdfio_error("out of memory for iodepth=%u", n);
	}
	return 0;
}

MDFIO_U32_OPT(cb_bucket_per_dataset, "bucket_per_dataset", struct s3_options, bucket_per_dataset, 0, 1)
MDFIO_U32_OPT(cb_stall_timeout, "stall_timeout", struct s3_options, stall_timeout, 1, 3600)

static const struct fio_option s3_options[] = {
	MDFIO_STR_OPT("bucket", struct s3_options, bucket,
		      "The existing bucket whose keys <prefix><rank>_<d>/file-<i> are the objects (required)"),
	MDFIO_STR_OPT("prefix", struct s3_options, prefix,
		      "Where in the bucket the datasets are: a key prefix, '/' added if it has none (default: none)"),
	MDFIO_STR_OPT("endpoint", struct s3_options, endpoint,
		      "http(s)://HOST[:PORT] of the S3 service (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's endpoint_url, AWS)"),
	MDFIO_STR_OPT("region", struct s3_options, region,
		      "The region requests are signed for (default: AWS_REGION, AWS_DEFAULT_REGION, the profile's, us-east-1)"),
	MDFIO_STR_OPT("profile", struct s3_options, profile,
		      "The profile of ~/.aws/credentials and ~/.aws/config whose keys to use, not the environment's (default: AWS_PROFILE, then the environment's keys, then [default])"),
	MDFIO_OPT("bucket_per_dataset", cb_bucket_per_dataset, "0",
		  "1: each dataset is a bucket <bucket>-<rank>-<d> of its own, made and removed by mdfio, its objects keys file-<i> (0: key prefixes in bucket=)"),
	MDFIO_OPT("stall_timeout", cb_stall_timeout, "60",
		  "Seconds a request may wait to connect or for its next byte before it fails; then the store is taken as lost and the run stops (1 to 3600)"),
	MDFIO_STR_OPT("addressing", struct s3_options, addressing,
		      "path (https://HOST/BUCKET/KEY, default) or virtual (https://BUCKET.HOST/KEY)"),
	MDFIO_STR_OPT("ca_bundle", struct s3_options, ca_bundle,
		      "The CA certificates that verify the endpoint's (default: AWS_CA_BUNDLE, the profile's, the system's)"),
	{ .name = NULL },
};

static const struct mdfio_backend s3_backend = {
	.name = "mdfio-s3",
	.start = s3_start,
	.commit = s3_commit,
	.reap = s3_reap,
	.init = s3_init,
	.exit = s3_exit,
	.options = s3_options,
	.option_struct_size = sizeof(struct s3_options),
	.store = &s3_store,
};

MDFIO_EXPORT void get_ioengine(struct ioengine_ops **ops);
void get_ioengine(struct ioengine_ops **ops)
{
	mdfio_get_ioengine(ops, &s3_backend);
}
