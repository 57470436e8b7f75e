/* mdfio-s3's HTTP (s3http.h).
 *
 * libcurl 7.88 signs what it is given, and no more: it adds no
 * x-amz-content-sha256 header (so every request carries
 * UNSIGNED-PAYLOAD), and signs the query string as written (so every
 * query here is written sorted and percent-encoded). A create is a PUT of
 * POSTFIELDS, not an upload from a callback, after which 7.88 would wait
 * for "100 Continue" on every object; its Content-Type is set, or curl
 * would send a form's. */
#include "s3http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "namespace.h"

const char *const mdfio_s3_method_names[] = { "HEAD", "GET", "PUT", "DELETE" };

struct curl_slist *mdfio_s3_headers(const struct mdfio_s3_client *c, int put)
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

void mdfio_s3_client_free(struct mdfio_s3_client *c)
{
	if (c->easy)
		curl_easy_cleanup(c->easy);
	curl_slist_free_all(c->hdr);
	curl_slist_free_all(c->hdr_put);
	free(c->base);
	free(c->where);
	free(c->claim_url);
	free(c->check_url);
	free(c->claim);
	if (c->global)
		curl_global_cleanup();
	/* the keys leave no copy behind in freed memory */
	memset(&c->aws, 0, sizeof(c->aws));
	free(c);
}

/* ------------------------------------------------------------------ URLs */

char *mdfio_s3_bucket_url(const char *endpoint, const char *bucket, int virtual_host)
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

/* Its prefix in the bucket, or the bucket <bucket>-<rank>-<d> of its own
 * (a bucket name takes no '_'). */
void mdfio_s3_dataset_url(const struct mdfio_s3_client *c, const char *dataset, char *out, size_t len)
{
	if (c->per_bucket) {
		char name[MDFIO_S3_BUCKET_MAX + MDFIO_DATASET_NAME_MAX + 2], *u, *us;

		snprintf(name, sizeof(name), "%s-%s", c->bucket, dataset);
		us = strchr(name, '_');
		if (us)
			*us = '-';
		u = mdfio_s3_bucket_url(c->endpoint, name, c->virtual_host);
		snprintf(out, len, "%s", u ? u : "");
		free(u);
	} else {
		snprintf(out, len, "%s/%s%s", c->base, c->prefix, dataset);
	}
}

size_t mdfio_s3_url_room(const struct mdfio_s3_client *c)
{
	return strlen(c->base) + strlen(c->prefix) + strlen(c->bucket) + 2 * MDFIO_DATASET_NAME_MAX +
	       MDFIO_OBJECT_NAME_MAX + sizeof(MDFIO_S3_BUCKET_MARKER) + 8;
}

char *mdfio_s3_key_url(const struct mdfio_s3_client *c, const char *dataset, const char *name)
{
	size_t n = mdfio_s3_url_room(c);
	char *u = malloc(n);

	if (u) {
		mdfio_s3_dataset_url(c, dataset, u, n);
		snprintf(u + strlen(u), n - strlen(u), "/%s", !name[0] && c->per_bucket ? MDFIO_S3_BUCKET_MARKER : name);
	}
	return u;
}

/* The query is written sorted and encoded, as libcurl 7.88 signs it as
 * written. */
char *mdfio_s3_list_url(const char *base, const char *p, unsigned int max, const char *token)
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

char *mdfio_s3_next_page(const struct mdfio_s3_sink *body)
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

/* ---------------------------------------------------------------- HTTP */

static size_t sink_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct mdfio_s3_sink *s = arg;
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

void mdfio_s3_setup(const struct mdfio_s3_client *c, CURL *h, const char *url, enum mdfio_s3_method m,
		    struct curl_slist *hdr, const void *body, size_t len, struct mdfio_s3_sink *sink)
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
	case MDFIO_S3_HEAD:
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
		break;
	case MDFIO_S3_GET:
		break;
	case MDFIO_S3_PUT:
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, len ? body : "");
		break;
	case MDFIO_S3_DELETE:
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
		break;
	}
}

int mdfio_s3_result_errno(CURLcode rc, long status)
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
	case CURLE_PARTIAL_FILE:	/* an answer's body cut short */
		return ECONNRESET;	/* the connection was cut */
	case CURLE_OUT_OF_MEMORY:
		return ENOMEM;
	default:
		return EIO;
	}
	return mdfio_s3_status_errno(status);
}

int mdfio_s3_retryable(CURLcode rc, long status)
{
	switch (rc) {
	case CURLE_OK:
		return status >= 500 && status <= 599;
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE:
		return 1;
	default:
		return 0;
	}
}

uint64_t mdfio_s3_backoff_ns(unsigned int retry, uint64_t *seed)
{
	uint64_t cap = MDFIO_S3_BACKOFF_BASE_NS, z;

	while (--retry && cap < MDFIO_S3_BACKOFF_CAP_NS)
		cap *= 2;
	if (cap > MDFIO_S3_BACKOFF_CAP_NS)
		cap = MDFIO_S3_BACKOFF_CAP_NS;
	/* splitmix64: any fair draw will do, none shared with other code */
	z = (*seed += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	z ^= z >> 31;
	return 1 + z % cap;
}

/* The status and the Code element of an error body, nothing else of it:
 * S3 error bodies may echo the canonical request, which holds the
 * session token. */
const char *mdfio_s3_describe(char *out, size_t len, CURLcode rc, long status, const char *body,
			      size_t body_len)
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

int mdfio_s3_store_req_body(struct mdfio_s3_client *c, const char *url, enum mdfio_s3_method m,
			    struct curl_slist *hdr, const void *data, size_t data_len, struct mdfio_s3_sink *sink,
			    long *status, CURLcode *rcp, size_t *blen)
{
	struct mdfio_s3_sink err = { c->errbody, sizeof(c->errbody), 0, 0, 0, 0 };
	CURLcode rc;

	mdfio_s3_setup(c, c->easy, url, m, hdr, data, data_len, sink ? sink : &err);
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
	return mdfio_s3_result_errno(rc, *status);
}

int mdfio_s3_opened_connection(CURL *h)
{
	long n = 0;

	return curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &n) == CURLE_OK && n > 0;
}

int mdfio_s3_store_req(struct mdfio_s3_client *c, const char *url, enum mdfio_s3_method m, struct curl_slist *hdr,
		       struct mdfio_s3_sink *sink, long *status, CURLcode *rcp, size_t *blen)
{
	return mdfio_s3_store_req_body(c, url, m, hdr, NULL, 0, sink, status, rcp, blen);
}

int mdfio_s3_store_failure(const struct mdfio_s3_client *c, enum mdfio_s3_method m, const char *what, CURLcode rc,
			   long status, size_t blen, char *out, size_t len)
{
	char d[128];

	if (rc == CURLE_OK && (status == 404 || status == 412))
		return 0;
	snprintf(out, len, "%s %s: %s", mdfio_s3_method_names[m], what,
		 mdfio_s3_describe(d, sizeof(d), rc, status, c->errbody, blen));
	return 1;
}

int mdfio_s3_store_call(struct mdfio_s3_client *c, const char *url, enum mdfio_s3_method m, char *out, size_t len)
{
	long status;
	CURLcode rc;
	size_t blen;
	int err = mdfio_s3_store_req(c, url, m, c->hdr, NULL, &status, &rc, &blen);

	out[0] = 0;
	if (err)
		mdfio_s3_store_failure(c, m, c->where, rc, status, blen, out, len);
	return err;
}
