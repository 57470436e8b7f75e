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
 * MDFIO_S3_BUCKET_MARKER, its objects keys file-<i>. A run's coordination, the
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
 * The HTTP (URLs, handles, the store's blocking requests, what a request's
 * end means) is lib/s3http.c, the namespace's claim lib/s3claim.c. */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "awsconf.h"
#include "backend.h"
#include "s3claim.h"
#include "s3http.h"
#include "s3wire.h"

struct s3_options {
	struct mdfio_options core;
	char *bucket, *prefix, *endpoint, *region, *profile, *addressing, *ca_bundle;
	unsigned int bucket_per_dataset;
	unsigned int stall_timeout;	/* seconds */
	unsigned int retries;
	/* not an option: the client the store opened, for the backend's
	 * init (both run in the job's process, the store first) */
	struct mdfio_s3_client *client;
};

/* ------------------------------------------------------------- the store */

struct s3_listing {
	struct mdfio_s3_client *c;
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
static void store_failed(const struct mdfio_s3_client *c, enum mdfio_s3_method m, const char *what,
			 CURLcode rc, long status, size_t blen)
{
	char line[MDFIO_S3_LINE_MAX];

	if (mdfio_s3_store_failure(c, m, what, rc, status, blen, line, sizeof(line)))
		mdfio_error("%s", line);
}

/* A store request without a body to keep: 0 or an errno value, a failure
 * the errno value does not tell said in one line. */
static int store_call(struct mdfio_s3_client *c, const char *url, enum mdfio_s3_method m)
{
	char line[MDFIO_S3_LINE_MAX];
	int err = mdfio_s3_store_call(c, url, m, line, sizeof(line));

	if (line[0])
		mdfio_error("%s", line);
	return err;
}

/* Fills l with every key of the dataset but its marker (up to max if not
 * 0): those under "<prefix><dataset>/", or in the dataset's bucket. 0 or
 * an errno value. */
static int list_keys(struct s3_listing *l, size_t max)
{
	struct mdfio_s3_client *c = l->c;
	size_t plen = c->per_bucket ? 0 : strlen(c->prefix) + strlen(l->dataset) + 1;
	char *p = malloc(plen + 1), *token = NULL, *base = malloc(mdfio_s3_url_room(c));
	struct mdfio_s3_sink body = { NULL, 0, 0, 0, MDFIO_S3_LISTBODY_MAX, 1 };
	int err = 0;

	if (!p || !base) {
		free(p);
		free(base);
		return ENOMEM;
	}
	if (c->per_bucket) {
		mdfio_s3_dataset_url(c, l->dataset, base, mdfio_s3_url_room(c));
		p[0] = 0;
	} else {
		snprintf(base, mdfio_s3_url_room(c), "%s", c->base);
		snprintf(p, plen + 1, "%s%s/", c->prefix, l->dataset);
	}
	listing_clear(l);
	for (;;) {
		char *url = mdfio_s3_list_url(base, p, max ? (unsigned int)max : MDFIO_S3_LIST_PAGE, token), *key;
		const char *at;
		long status;
		CURLcode rc;
		size_t blen;

		if (!url) {
			err = ENOMEM;
			break;
		}
		body.len = body.total = 0;
		err = mdfio_s3_store_req(c, url, MDFIO_S3_GET, c->hdr, &body, &status, &rc, &blen);
		free(url);
		if (err) {
			store_failed(c, MDFIO_S3_GET, c->where, rc, status, blen);
			break;
		}
		at = body.buf;
		while (body.buf && (key = mdfio_s3_element(at, body.len - (size_t)(at - body.buf), "Key", &at))) {
			if (strncmp(key, p, plen) || !key[plen] || (c->per_bucket && !strcmp(key, MDFIO_S3_BUCKET_MARKER))) {
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
		token = mdfio_s3_next_page(&body);
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
static int bucket_there(struct mdfio_s3_client *c, const char *name)
{
	char *url = malloc(mdfio_s3_url_room(c));
	long status;
	CURLcode rc;
	size_t blen;
	int err;

	if (!url)
		return -ENOMEM;
	mdfio_s3_dataset_url(c, name, url, mdfio_s3_url_room(c));
	err = mdfio_s3_store_req(c, url, MDFIO_S3_HEAD, c->hdr, NULL, &status, &rc, &blen);
	free(url);
	if (err && err != ENOENT)
		store_failed(c, MDFIO_S3_HEAD, c->where, rc, status, blen);
	return !err ? 1 : err == ENOENT ? 0 : -err;
}

/* A bucket request on dataset name's bucket (PUT: create, DELETE: remove):
 * 0 or an errno value, EEXIST for a bucket that exists, ENOTEMPTY for one
 * that holds keys. */
static int bucket_req(struct mdfio_s3_client *c, const char *name, enum mdfio_s3_method m)
{
	char *url = malloc(mdfio_s3_url_room(c)), where[sizeof(c->aws.region) + 160] = "";
	long status;
	CURLcode rc;
	size_t blen;
	int err;

	if (!url)
		return ENOMEM;
	mdfio_s3_dataset_url(c, name, url, mdfio_s3_url_room(c));
	/* S3 makes a bucket in us-east-1 unless the request names another
	 * region in its body, and refuses a body that names us-east-1 */
	if (m == MDFIO_S3_PUT && strcmp(c->aws.region, "us-east-1"))
		snprintf(where, sizeof(where),
			 "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
			 "<LocationConstraint>%s</LocationConstraint></CreateBucketConfiguration>", c->aws.region);
	err = mdfio_s3_store_req_body(c, url, m, c->hdr, where, strlen(where), NULL, &status, &rc, &blen);
	free(url);
	if (err && rc == CURLE_OK && status == 409)
		return m == MDFIO_S3_PUT ? EEXIST : ENOTEMPTY;
	if (err)
		store_failed(c, m, c->where, rc, status, blen);
	return err;
}

/* What the marker of dataset name is: an enum mdfio_probe or minus an
 * errno value. */
static int s3_probe(void *state, const char *name, const char **what)
{
	struct mdfio_s3_client *c = state;
	struct s3_listing l = { .c = c, .dataset = (char *)name };
	char *url = mdfio_s3_key_url(c, name, "");
	curl_off_t len = -1;
	long status;
	CURLcode rc;
	size_t blen;
	int err;

	*what = NULL;
	if (!url)
		return -ENOMEM;
	err = mdfio_s3_store_req(c, url, MDFIO_S3_HEAD, c->hdr, NULL, &status, &rc, &blen);
	free(url);
	if (!err) {
		curl_easy_getinfo(c->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len);
		if (!len)
			return MDFIO_PROBE_DATASET;
		*what = "is not mdfio-s3's dataset marker (an empty object)";
		return MDFIO_PROBE_OTHER;
	}
	if (err != ENOENT) {
		store_failed(c, MDFIO_S3_HEAD, c->where, rc, status, blen);
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

/* Whether the key at url is an empty object, as a marker is. */
static int own_marker(struct mdfio_s3_client *c, const char *url)
{
	struct mdfio_s3_sink body = { NULL, 0, 0, 0, 1, 1 };
	long status;
	CURLcode rc;
	size_t blen;
	int empty = !mdfio_s3_store_req(c, url, MDFIO_S3_GET, c->hdr, &body, &status, &rc, &blen) && body.total == 0;

	free(body.buf);
	return empty;
}

static int s3_make(void *state, const char *name)
{
	struct mdfio_s3_client *c = state;
	char *url = mdfio_s3_key_url(c, name, "");
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
			err = bucket_req(c, name, MDFIO_S3_PUT);
		else
			err = err > 0 ? EEXIST : -err;
		if (err) {
			free(url);
			return err;
		}
	}
	err = mdfio_s3_store_req(c, url, MDFIO_S3_PUT, c->hdr_put, NULL, &status, &rc, &blen);
	/* a 412 after libcurl sent the marker again may be our own first
	 * copy: the probe before this make found no such key, so an empty
	 * one now is ours */
	if (err == EEXIST && mdfio_s3_opened_connection(c->easy) && own_marker(c, url))
		err = 0;
	free(url);
	if (err)
		store_failed(c, MDFIO_S3_PUT, c->where, rc, status, blen);
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
	struct mdfio_s3_client *c = state;
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
	url = mdfio_s3_key_url(c, name, "");
	if (!url)
		return ENOMEM;
	err = store_call(c, url, MDFIO_S3_DELETE);
	free(url);
	if (!err && c->per_bucket)
		err = bucket_req(c, name, MDFIO_S3_DELETE);
	return err;
}

static int s3_unlink(void *state, int handle, const char *dataset, const char *name)
{
	struct mdfio_s3_client *c = state;
	char *url = mdfio_s3_key_url(c, dataset, name);
	int err;

	(void)handle;
	if (!url)
		return ENOMEM;
	err = store_call(c, url, MDFIO_S3_DELETE);
	free(url);
	return err;
}

/* The claim goes with the namespace's last dataset: after a cleanup that
 * emptied it, or a precreate that was refused before it made any. */
static void s3_close(void *state)
{
	struct mdfio_s3_client *c = state;
	char line[MDFIO_S3_LINE_MAX];

	if (mdfio_s3_release(c, line, sizeof(line)))
		mdfio_error("%s", line);
	mdfio_s3_client_free(c);
}

static int s3_open(struct thread_data *td, int root_fd, void **state, const char **where)
{
	struct s3_options *o = td->eo;
	const struct mdfio_aws_options ao = { o->profile, o->region, o->endpoint, o->ca_bundle };
	struct mdfio_s3_client *c;
	char err[MDFIO_AWS_TEXT_MAX + 256], d[128], line[MDFIO_S3_LINE_MAX], run_id[64], *url;
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
		mdfio_s3_client_free(c);
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
		mdfio_s3_client_free(c);
		return mdfio_error("endpoint: holds a user name or password (user:password@HOST): not taken; the keys come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or a profile");
	}
	if (strncmp(c->aws.endpoint, "http://", 7) && strncmp(c->aws.endpoint, "https://", 8)) {
		e = mdfio_error("endpoint %s: expected http://HOST[:PORT] or https://HOST[:PORT]", c->aws.endpoint);
		mdfio_s3_client_free(c);
		return e;
	}
	c->endpoint = c->aws.endpoint;
	c->bucket = o->bucket;
	c->virtual_host = virtual_host;
	c->stall_s = o->stall_timeout;
	c->per_bucket = (int)o->bucket_per_dataset;
	c->datasets = o->core.datasets;
	snprintf(c->prefix, sizeof(c->prefix), "%s%s", pfx, pfx[0] && pfx[strlen(pfx) - 1] != '/' ? "/" : "");
	snprintf(c->sigv4, sizeof(c->sigv4), "aws:amz:%s:s3", c->aws.region);
	n = strlen(o->bucket) + strlen(c->prefix) + 8;
	c->where = malloc(n);
	if (c->where) {
		snprintf(c->where, n, "s3://%s%s%s", o->bucket, c->prefix[0] ? "/" : "", c->prefix);
		if (c->prefix[0])
			c->where[strlen(c->where) - 1] = 0;	/* datasets go after a '/' */
	}
	c->base = mdfio_s3_bucket_url(c->endpoint, o->bucket, virtual_host);
	c->global = !curl_global_init(CURL_GLOBAL_DEFAULT);
	c->easy = c->global ? curl_easy_init() : NULL;
	c->hdr = mdfio_s3_headers(c, 0);
	c->hdr_put = mdfio_s3_headers(c, 1);
	if (!c->where || !c->base || !c->easy || !c->hdr || !c->hdr_put) {
		mdfio_s3_client_free(c);
		return mdfio_error("out of memory (or libcurl cannot start)");
	}
	/* one signed request before anything is made: the endpoint, TLS,
	 * the credentials and the bucket, in one line if any fails */
	url = mdfio_s3_list_url(c->base, c->prefix, 1, NULL);
	e = url ? mdfio_s3_store_req(c, url, MDFIO_S3_GET, c->hdr, NULL, &status, &rc, &blen) : ENOMEM;
	free(url);
	if (e) {
		e = mdfio_error("endpoint %s, bucket %s: %s (credentials: %s, region %s)", c->endpoint, o->bucket,
				mdfio_s3_describe(d, sizeof(d), rc, status, c->errbody, blen), c->aws.credentials_from,
				c->aws.region);
		mdfio_s3_client_free(c);
		return e;
	}
	/* every phase that makes keys relies on If-None-Match: * never to
	 * replace one; a server that ignores it is refused before the claim,
	 * which relies on it too. A read-only benchmark makes none, and may
	 * run with keys that cannot write. */
	if ((o->core.phase == MDFIO_PRECREATE + 1 || (o->core.phase == MDFIO_BENCHMARK + 1 && !o->core.read_only)) &&
	    mdfio_s3_check_if_none_match(c, line, sizeof(line))) {
		mdfio_error("%s", line);
		mdfio_s3_client_free(c);
		return 1;
	}
	if (mdfio_option_value("run_id", o->core.run_id ? o->core.run_id : "", run_id, sizeof(run_id))) {
		mdfio_s3_check_remove(c, line, sizeof(line));
		mdfio_s3_client_free(c);
		return 1;
	}
	if (mdfio_s3_claim(c, root_fd, o->core.phase, run_id, line, sizeof(line))) {
		mdfio_error("%s", line);
		mdfio_s3_check_remove(c, line, sizeof(line));
		mdfio_s3_client_free(c);
		return 1;
	}
	if (mdfio_s3_check_remove(c, line, sizeof(line))) {
		mdfio_error("%s", line);
		mdfio_s3_client_free(c);
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
	struct mdfio_s3_sink body;
	char errbody[MDFIO_S3_ERRBODY_MAX];
	unsigned int retried;	/* times its request was sent again */
	uint64_t retry_at;	/* ns: when it goes again; 0: it does not wait */
	char why[128];		/* its failure's status and Code: req.why */
};

/* The most reasons of retries a phase's line tells apart; the rest are
 * "other". */
#define RETRY_REASONS 6

/* Up to iodepth units in flight on one multi handle, whose connections
 * every unit's handle shares and reuses (as mdfio-uring keeps them in one
 * ring). */
struct s3_queue {
	struct thread_data *td;
	struct mdfio_s3_client *c;
	struct slot *slot;
	CURLM *multi;
	/* in_flight: units whose request has not ended, a retry's wait
	 * included; waiting: of those, the ones waiting to be sent again */
	unsigned int n, in_flight, waiting;
	size_t url_len;
	unsigned int retries;	/* retries= */
	uint64_t seed;		/* of the backoff's draws */
	/* the requests sent again, and why: "503 SlowDown", curl's words */
	uint64_t retried;
	unsigned int reasons;
	struct {
		char what[128];	/* as a slot's why */
		uint64_t n;
	} reason[RETRY_REASONS];
};

static const enum mdfio_s3_method op_method[MDFIO_OP_NR] = {
	[MDFIO_OP_CREATE] = MDFIO_S3_PUT, [MDFIO_OP_STAT] = MDFIO_S3_HEAD,
	[MDFIO_OP_READ] = MDFIO_S3_GET, [MDFIO_OP_DELETE] = MDFIO_S3_DELETE,
};

static void prepare(struct s3_queue *q, struct slot *s)
{
	struct mdfio_req *r = &s->u->req;
	enum mdfio_s3_method m = op_method[r->op];

	mdfio_s3_dataset_url(q->c, r->dataset, s->url, q->url_len);
	snprintf(s->url + strlen(s->url), q->url_len - strlen(s->url), "/%s", r->name);
	if (m == MDFIO_S3_GET)
		s->body = (struct mdfio_s3_sink){ r->buf, r->size, 0, 0, 0, 0 };
	else
		s->body = (struct mdfio_s3_sink){ s->errbody, sizeof(s->errbody), 0, 0, 0, 0 };
	/* a create never replaces a key: one that exists is EEXIST (412), as
	 * O_EXCL's, and the core then leaves it to whoever made it */
	mdfio_s3_setup(q->c, s->h, s->url, m, m == MDFIO_S3_PUT ? q->c->hdr_put : q->c->hdr, r->buf, r->size, &s->body);
	curl_easy_setopt(s->h, CURLOPT_PRIVATE, s);
}

/* One more request sent again, for reason what. */
static void count_retry(struct s3_queue *q, const char *what)
{
	unsigned int k;

	q->retried++;
	for (k = 0; k < q->reasons && strcmp(q->reason[k].what, what); k++)
		;
	if (k == q->reasons) {
		if (k == RETRY_REASONS)
			snprintf(q->reason[--k].what, sizeof(q->reason[k].what), "other");
		else
			snprintf(q->reason[q->reasons++].what, sizeof(q->reason[k].what), "%s", what);
	}
	q->reason[k].n++;
}

/* Whether the key of a create that came back 412 after a retry, ours or
 * libcurl's own (mdfio_s3_opened_connection), holds exactly the bytes it
 * wrote: then its first attempt made it, and only the answer was lost.
 * Someone else's key differs (or is another mdfio run's, which the claim
 * keeps out). Read on the store's handle, synchronously. */
static int own_create(struct s3_queue *q, struct slot *s)
{
	const struct mdfio_req *r = &s->u->req;
	struct mdfio_s3_sink body = { NULL, 0, 0, 0, r->size + 1, 1 };
	long status;
	CURLcode rc;
	size_t blen;
	int same = !mdfio_s3_store_req(q->c, s->url, MDFIO_S3_GET, q->c->hdr, &body, &status, &rc, &blen) &&
		   body.total == r->size && body.len == r->size && (!r->size || !memcmp(body.buf, r->buf, r->size));

	free(body.buf);
	return same;
}

/* The end of slot s's request, curl's result rc, into its req: 1, or 0
 * if it is to be sent again (retries=), after a wait (retry_at). */
static int finish(struct s3_queue *q, struct slot *s, CURLcode rc)
{
	struct mdfio_req *r = &s->u->req;
	long status = 0;
	int err;

	curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
	err = mdfio_s3_result_errno(rc, status);
	if (err)
		mdfio_s3_describe(s->why, sizeof(s->why), rc, status, s->body.buf, s->body.len);
	if (err && s->retried < q->retries && mdfio_s3_retryable(rc, status)) {
		count_retry(q, strncmp(s->why, "HTTP ", 5) ? s->why : s->why + 5);
		s->retry_at = mdfio_now() + mdfio_s3_backoff_ns(++s->retried, &q->seed);
		q->waiting++;
		return 0;
	}
	if (err == EEXIST && r->op == MDFIO_OP_CREATE && (s->retried || mdfio_s3_opened_connection(s->h)) &&
	    own_create(q, s))
		err = 0;
	if (!err && r->op == MDFIO_OP_STAT) {
		curl_off_t len = -1;

		curl_easy_getinfo(s->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len);
		r->st_size = len < 0 ? 0 : (uint64_t)len;
	} else if (!err && r->op == MDFIO_OP_READ && s->body.total < r->size) {
		err = EIO;	/* a short object, as a short read */
		snprintf(s->why, sizeof(s->why), "HTTP %ld, %zu of %zu bytes", status, s->body.total, r->size);
	}
	r->err = err;
	r->why = err ? s->why : NULL;
	return 1;
}

/* The request goes out at the next commit or reap; its latency runs from
 * here to the reap that sees it end, its retries and their waits
 * included: what the benchmark waited for the operation. */
static int s3_start(void *priv, struct mdfio_unit *u)
{
	struct s3_queue *q = priv;
	struct slot *s = &q->slot[u->index];

	prepare(q, s);
	s->retried = 0;
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
		if (!finish(q, s, rc))
			continue;	/* it waits to be sent again */
		q->in_flight--;
		/* one clock read for the transfers seen ending together */
		if (!now)
			now = mdfio_now();
		ended += (unsigned int)mdfio_req_done(q->td, s->u, now);
	}
	return ended;
}

/* Sends again each request whose wait is over; the ms until the next
 * wait is over (at most 1000), *ended counting the units that ended
 * instead (a handle curl would not take). */
static int send_due(struct s3_queue *q, unsigned int *ended)
{
	uint64_t now = mdfio_now(), next = 1000000000u;
	unsigned int i;

	for (i = 0; i < q->n && q->waiting; i++) {
		struct slot *s = &q->slot[i];

		if (!s->retry_at)
			continue;
		if (s->retry_at > now) {
			if (s->retry_at - now < next)
				next = s->retry_at - now;
			continue;
		}
		s->retry_at = 0;
		q->waiting--;
		prepare(q, s);
		if (curl_multi_add_handle(q->multi, s->h) == CURLM_OK) {
			s->busy = 1;
		} else {
			s->retried = q->retries;	/* no further retry */
			finish(q, s, CURLE_OUT_OF_MEMORY);
			q->in_flight--;
			*ended += (unsigned int)mdfio_req_done(q->td, s->u, mdfio_now());
		}
	}
	return (int)((next + 999999) / 1000000);
}

static int s3_reap(void *priv, unsigned int min)
{
	struct s3_queue *q = priv;
	unsigned int ended = 0;
	int running, wait_ms;

	for (;;) {
		wait_ms = q->waiting ? send_due(q, &ended) : 1000;
		if (curl_multi_perform(q->multi, &running) != CURLM_OK)
			return -EIO;
		ended += reap_done(q);
		if (ended >= min || !q->in_flight)
			return 0;
		if (curl_multi_poll(q->multi, NULL, 0, wait_ms, NULL) != CURLM_OK)
			return -EIO;
	}
}

/* The phase's retries, in one line of the rank's. */
static void say_retries(const struct s3_queue *q)
{
	char who[64], why[RETRY_REASONS * 96] = "";
	size_t k = 0;
	unsigned int i;

	for (i = 0; i < q->reasons; i++)
		k += (size_t)snprintf(why + k, sizeof(why) - k, "%s%s: %" PRIu64, i ? ", " : "", q->reason[i].what,
				      q->reason[i].n);
	mdfio_notice("%s: %" PRIu64 " request%s retried (%s)", mdfio_job_who(q->td, who, sizeof(who)), q->retried,
		     q->retried > 1 ? "s" : "", why);
}

static void s3_exit(void *priv)
{
	struct s3_queue *q = priv;
	unsigned int i;

	if (q->retried)
		say_retries(q);
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
	q->url_len = mdfio_s3_url_room(q->c);
	q->retries = o->retries;
	q->seed = mdfio_now() ^ ((uint64_t)getpid() << 32);
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
MDFIO_U32_OPT(cb_retries, "retries", struct s3_options, retries, 0, 10)

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
	MDFIO_OPT("retries", cb_retries, "0",
		  "Times a request that failed with a 5xx status or a cut connection is sent again, after a random wait that doubles at each (0 to 10; 0: never)"),
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
