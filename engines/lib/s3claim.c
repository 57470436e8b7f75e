/* mdfio-s3's claim of a namespace (s3claim.h). */
#include "s3claim.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "status.h"

#define CLAIM_KEY ".mdfio-namespace"
#define CLAIM_KEY_BUCKETS ".mdfio-namespace-buckets"
#define CLAIM_MAX 8192
/* a field of a claim as printed: a host name, a run id or a path */
#define FIELD_MAX 256

/* Whether the marker of dataset name is there: the empty key mdfio makes
 * (s3.c). 1, 0, or minus an errno value with one line in msg. */
static int marker_there(struct mdfio_s3_client *c, const char *name, char *msg, size_t len)
{
	char *url = mdfio_s3_key_url(c, name, "");
	curl_off_t size = -1;
	long status;
	CURLcode rc;
	size_t blen;
	int err;

	if (!url) {
		snprintf(msg, len, "out of memory");
		return -ENOMEM;
	}
	err = mdfio_s3_store_req(c, url, MDFIO_S3_HEAD, c->hdr, NULL, &status, &rc, &blen);
	free(url);
	if (err == ENOENT)
		return 0;
	if (err) {
		mdfio_s3_store_failure(c, MDFIO_S3_HEAD, c->where, rc, status, blen, msg, len);
		return -err;
	}
	curl_easy_getinfo(c->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &size);
	return size == 0;
}

/* Only what mdfio made counts: a name of a dataset this namespace has
 * (index below datasets=) that holds mdfio's marker. Someone else's key
 * 7_9/x beside the namespace, or a bucket <bucket>-7-9 of theirs, is no
 * dataset of it, and must not keep the claim forever. */
int mdfio_s3_datasets_left(struct mdfio_s3_client *c, char *msg, size_t len)
{
	size_t n = strlen(c->base) + strlen(c->endpoint) + 3 * strlen(c->prefix) + 3 * MDFIO_AWS_TEXT_MAX + 128;
	char *url = malloc(n), *ep = malloc(3 * strlen(c->prefix) + 1), *token = NULL, *head = malloc(n);
	struct mdfio_s3_sink body = { NULL, 0, 0, 0, MDFIO_S3_LISTBODY_MAX, 1 };
	int left = 0;

	msg[0] = 0;
	if (!url || !ep || !head) {
		snprintf(msg, len, "out of memory");
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
				 token ? "continuation-token=" : "", et, token ? "&" : "", MDFIO_S3_LIST_PAGE, ep);
		}
		body.len = body.total = 0;
		err = mdfio_s3_store_req(c, url, MDFIO_S3_GET, c->hdr, &body, &status, &rc, &blen);
		if (err) {
			mdfio_s3_store_failure(c, MDFIO_S3_GET, c->where, rc, status, blen, msg, len);
			left = -err;
			break;
		}
		at = body.buf;
		while (!left && body.buf &&
		       (item = mdfio_s3_element(at, body.len - (size_t)(at - body.buf),
						c->per_bucket ? "Name" : "CommonPrefixes", &at))) {
			char *p = c->per_bucket ? NULL : mdfio_s3_element(item, strlen(item), "Prefix", NULL);
			unsigned long r, d;
			int named = c->per_bucket ? mdfio_s3_dataset_named(item, head, '-', 0, &r, &d)
						  : p && mdfio_s3_dataset_named(p, head, '_', '/', &r, &d);

			if (named && d < c->datasets) {
				char name[64];

				snprintf(name, sizeof(name), "%lu_%lu", r, d);
				left = marker_there(c, name, msg, len);
			}
			free(p);
			free(item);
		}
		if (left || c->per_bucket)
			break;
		free(token);
		token = mdfio_s3_next_page(&body);
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

/* The claim's text: who holds the namespace, one field a line. Only
 * directory= decides whose it is (every rank and every phase of a run
 * coordinates there); the run and the host say who to ask. */
static int claim_text(struct mdfio_s3_client *c, const char *run_id, const char *dir)
{
	char host[FIELD_MAX] = "";
	size_t n = strlen(dir) + strlen(run_id) + sizeof(host) + 96;

	gethostname(host, sizeof(host) - 1);
	c->claim = malloc(n);
	if (!c->claim)
		return 1;
	snprintf(c->claim, n, "mdfio-s3 namespace\nrun=%s\nhost=%s\ndirectory=%s\n", run_id[0] ? run_id : "(unnamed)",
		 host, dir);
	return 0;
}

/* Reads the claim back: 0 if it holds dir, 1 if another's (its holder in
 * who), minus an errno value if it cannot be read (ENOENT: there is
 * none). */
static int claim_holder(struct mdfio_s3_client *c, const char *dir, char *who, size_t who_len, CURLcode *rc,
			long *status, size_t *blen)
{
	struct mdfio_s3_sink body = { NULL, 0, 0, 0, CLAIM_MAX, 1 };
	char holder_dir[PATH_MAX], run[FIELD_MAX], host[FIELD_MAX];
	int err = mdfio_s3_store_req(c, c->claim_url, MDFIO_S3_GET, c->hdr, &body, status, rc, blen);

	if (err) {
		free(body.buf);
		return -err;
	}
	mdfio_s3_claim_field(body.buf, body.len, "directory", holder_dir, sizeof(holder_dir));
	mdfio_s3_claim_field(body.buf, body.len, "run", run, sizeof(run));
	mdfio_s3_claim_field(body.buf, body.len, "host", host, sizeof(host));
	free(body.buf);
	if (body.total <= CLAIM_MAX && holder_dir[0] && !strcmp(holder_dir, dir))
		return 0;
	snprintf(who, who_len, "run %s on host %s, coordinated in directory=%s", run[0] ? run : "(unnamed)",
		 host[0] ? host : "(not said)", holder_dir[0] ? holder_dir : "(not said)");
	return 1;
}

/* A precreate claims the namespace for its directory= (If-None-Match: *;
 * a claim that holds this directory is its own, made by another rank or
 * by a request libcurl sent again), and reads it back: a server that
 * answered the PUT without honouring the condition may have let another
 * run's claim replace it. Every other phase refuses a claim for another
 * directory. Compared by the path of directory=, so every host of a run
 * must see it at one path. */
int mdfio_s3_claim(struct mdfio_s3_client *c, int root_fd, unsigned int phase, const char *run_id, char *msg,
		   size_t len)
{
	char link[64], dir[PATH_MAX], d[128], who[PATH_MAX + 2 * FIELD_MAX + 64];
	const char *key = c->per_bucket ? CLAIM_KEY_BUCKETS : CLAIM_KEY;
	long status = 0;
	CURLcode rc = CURLE_OK;
	size_t blen = 0;
	ssize_t dlen;
	int err;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", root_fd);
	dlen = readlink(link, dir, sizeof(dir) - 1);
	if (dlen < 0) {
		snprintf(msg, len, "directory=: cannot tell its path (%s), which %s%s of bucket %s names",
			 strerror(errno), c->prefix, key, c->bucket);
		return 1;
	}
	dir[dlen] = 0;
	c->claim_url = malloc(strlen(c->base) + strlen(c->prefix) + strlen(key) + 2);
	if (!c->claim_url || claim_text(c, run_id, dir)) {
		snprintf(msg, len, "out of memory");
		return 1;
	}
	sprintf(c->claim_url, "%s/%s%s", c->base, c->prefix, key);
	if (phase == MDFIO_PRECREATE + 1) {
		err = mdfio_s3_store_req_body(c, c->claim_url, MDFIO_S3_PUT, c->hdr_put, c->claim, strlen(c->claim),
					      NULL, &status, &rc, &blen);
		if (err && err != EEXIST) {
			c->claim_may_go = 1;
			snprintf(msg, len, "%s: cannot claim the namespace (key %s%s): %s", c->where, c->prefix, key,
				 mdfio_s3_describe(d, sizeof(d), rc, status, c->errbody, blen));
			return 1;
		}
	}
	err = claim_holder(c, dir, who, sizeof(who), &rc, &status, &blen);
	if (err == -ENOENT) {
		/* none: the core's checks of the datasets decide */
		c->claim_may_go = phase == MDFIO_CLEANUP + 1;
		return 0;
	}
	if (err < 0) {
		snprintf(msg, len, "%s: cannot read the namespace's claim (key %s%s): %s", c->where, c->prefix, key,
			 mdfio_s3_describe(d, sizeof(d), rc, status, c->errbody, blen));
		return 1;
	}
	if (err) {
		snprintf(msg, len, "%s: the namespace is claimed by %s, not this run's directory=%s (key %s%s of bucket %s); refusing (nothing was touched)",
			 c->where, who, dir, c->prefix, key, c->bucket);
		return 1;
	}
	c->claim_may_go = phase == MDFIO_CLEANUP + 1 || phase == MDFIO_PRECREATE + 1;
	return 0;
}

/* A second conditional PUT of a key this check made must find it there
 * (412). A server that answers it 200 replaced the key: it would replace
 * every key mdfio means only to make, someone else's too. */
int mdfio_s3_check_if_none_match(struct mdfio_s3_client *c, char *msg, size_t len)
{
	static const char text[] = "mdfio-s3: a check that PUT with If-None-Match: * never replaces a key\n";
	char host[FIELD_MAX] = "", key[FIELD_MAX + 64], *url, d[128];
	struct timespec ts;
	long status = 0;
	CURLcode rc = CURLE_OK;
	size_t n, blen = 0;
	int err, again;

	gethostname(host, sizeof(host) - 1);
	for (n = 0; host[n]; n++)
		if (!((host[n] >= 'a' && host[n] <= 'z') || (host[n] >= 'A' && host[n] <= 'Z') ||
		      (host[n] >= '0' && host[n] <= '9') || host[n] == '-' || host[n] == '.'))
			host[n] = '-';
	/* a name no one else has: this host and process, now */
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(key, sizeof(key), ".mdfio-check-%s-%ld-%lld%09ld", host, (long)getpid(), (long long)ts.tv_sec,
		 ts.tv_nsec);
	n = strlen(c->base) + strlen(c->prefix) + strlen(key) + 2;
	url = malloc(n);
	if (!url) {
		snprintf(msg, len, "out of memory");
		return 1;
	}
	snprintf(url, n, "%s/%s%s", c->base, c->prefix, key);
	err = mdfio_s3_store_req_body(c, url, MDFIO_S3_PUT, c->hdr_put, text, sizeof(text) - 1, NULL, &status, &rc,
				      &blen);
	if (err) {
		/* not made: nothing to delete */
		snprintf(msg, len, "endpoint %s, bucket %s: cannot make the key %s%s that checks If-None-Match: %s",
			 c->endpoint, c->bucket, c->prefix, key,
			 mdfio_s3_describe(d, sizeof(d), rc, status, c->errbody, blen));
		free(url);
		return 1;
	}
	again = mdfio_s3_store_req_body(c, url, MDFIO_S3_PUT, c->hdr_put, text, sizeof(text) - 1, NULL, &status,
					&rc, &blen);
	if (again == EEXIST) {
		msg[0] = 0;
	} else if (!again) {
		snprintf(msg, len, "endpoint %s does not honour If-None-Match: * (a conditional PUT replaced a key that exists): mdfio-s3 would overwrite keys it did not make; refusing (nothing was touched)",
			 c->endpoint);
	} else {
		snprintf(msg, len, "endpoint %s, bucket %s: cannot check If-None-Match: %s", c->endpoint, c->bucket,
			 mdfio_s3_describe(d, sizeof(d), rc, status, c->errbody, blen));
	}
	c->check_url = url;
	if (!msg[0])
		return 0;
	/* msg says why already */
	mdfio_s3_check_remove(c, d, sizeof(d));
	return 1;
}

int mdfio_s3_check_remove(struct mdfio_s3_client *c, char *msg, size_t len)
{
	long status = 0;
	CURLcode rc = CURLE_OK;
	size_t blen = 0;
	char d[128];
	int err;

	msg[0] = 0;
	if (!c->check_url)
		return 0;
	/* the key this check made, and no other */
	err = mdfio_s3_store_req(c, c->check_url, MDFIO_S3_DELETE, c->hdr, NULL, &status, &rc, &blen);
	if (err)
		snprintf(msg, len, "endpoint %s, bucket %s: cannot delete the key %s that checked If-None-Match: %s",
			 c->endpoint, c->bucket, c->check_url + strlen(c->base) + 1,
			 mdfio_s3_describe(d, sizeof(d), rc, status, c->errbody, blen));
	free(c->check_url);
	c->check_url = NULL;
	return err != 0;
}

/* After a cleanup that emptied the namespace, or a precreate that was
 * refused before it made any dataset. */
int mdfio_s3_release(struct mdfio_s3_client *c, char *msg, size_t len)
{
	msg[0] = 0;
	if (!c->claim_may_go || !c->claim_url)
		return 0;
	if (mdfio_s3_datasets_left(c, msg, len))
		return msg[0] != 0;
	mdfio_s3_store_call(c, c->claim_url, MDFIO_S3_DELETE, msg, len);
	return msg[0] != 0;
}
