/* mdfio-s3's claim of a namespace (s3claim.h). */
#include "s3claim.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "status.h"

#define CLAIM_KEY ".mdfio-namespace"
#define CLAIM_KEY_BUCKETS ".mdfio-namespace-buckets"
#define CLAIM_MAX 8192

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

/* A precreate claims the namespace for its directory= (If-None-Match: *;
 * a claim that holds this directory is its own, made by another rank or
 * by a request libcurl sent again); every other phase refuses a claim
 * for another directory. Compared by the path of directory=, so every
 * host of a run must see it at one path. */
int mdfio_s3_claim(struct mdfio_s3_client *c, int root_fd, unsigned int phase, char *msg, size_t len)
{
	char link[64], dir[PATH_MAX], d[128];
	struct mdfio_s3_sink body = { NULL, 0, 0, 0, CLAIM_MAX, 1 };
	const char *key = c->per_bucket ? CLAIM_KEY_BUCKETS : CLAIM_KEY;
	long status = 0;
	CURLcode rc = CURLE_OK;
	size_t blen = 0, n;
	ssize_t dlen;
	int err, same;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", root_fd);
	dlen = readlink(link, dir, sizeof(dir) - 1);
	if (dlen < 0) {
		snprintf(msg, len, "directory=: cannot tell its path (%s), which %s%s of bucket %s names",
			 strerror(errno), c->prefix, key, c->bucket);
		return 1;
	}
	dir[dlen] = 0;
	n = (size_t)dlen + 64;
	c->claim = malloc(n);
	c->claim_url = malloc(strlen(c->base) + strlen(c->prefix) + strlen(key) + 2);
	if (!c->claim || !c->claim_url) {
		snprintf(msg, len, "out of memory");
		return 1;
	}
	snprintf(c->claim, n, "mdfio-s3 namespace; directory=%s\n", dir);
	sprintf(c->claim_url, "%s/%s%s", c->base, c->prefix, key);
	if (phase == MDFIO_PRECREATE + 1) {
		err = mdfio_s3_store_req_body(c, c->claim_url, MDFIO_S3_PUT, c->hdr_put, c->claim, strlen(c->claim),
					      NULL, &status, &rc, &blen);
		c->claim_may_go = 1;
		if (!err)
			return 0;
		if (err != EEXIST) {
			snprintf(msg, len, "%s: cannot claim the namespace (key %s%s): %s", c->where, c->prefix, key,
				 mdfio_s3_describe(d, sizeof(d), rc, status, c->errbody, blen));
			return 1;
		}
	}
	err = mdfio_s3_store_req(c, c->claim_url, MDFIO_S3_GET, c->hdr, &body, &status, &rc, &blen);
	if (err == ENOENT) {
		/* none: the core's checks of the datasets decide */
		c->claim_may_go = phase == MDFIO_CLEANUP + 1;
		free(body.buf);
		return 0;
	}
	same = !err && body.total == strlen(c->claim) && body.len == body.total &&
	       !memcmp(body.buf, c->claim, body.len);
	free(body.buf);
	if (err) {
		snprintf(msg, len, "%s: cannot read the namespace's claim (key %s%s): %s", c->where, c->prefix, key,
			 mdfio_s3_describe(d, sizeof(d), rc, status, c->errbody, blen));
		return 1;
	}
	if (!same) {
		snprintf(msg, len, "%s: the namespace is claimed by a run coordinated in another directory= than %s (key %s%s of bucket %s says which); refusing (nothing was touched)",
			 c->where, dir, c->prefix, key, c->bucket);
		return 1;
	}
	c->claim_may_go = phase == MDFIO_CLEANUP + 1 || phase == MDFIO_PRECREATE + 1;
	return 0;
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
