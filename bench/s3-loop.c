/* The md-workbench cycle for one process against an S3 server as a bare
 * libcurl client: the limit mdfio-s3 is measured against. The requests
 * mdfio-s3 makes (engines/backends/s3.c), on the same keys, with the same
 * headers, signed by libcurl (CURLOPT_AWS_SIGV4), IODEPTH units in flight
 * on one curl multi handle, and nothing else: no fio, no status file, no
 * clock read per request.
 *
 *   s3-loop BUCKET[/PREFIX] PHASE DATASETS PRECREATE STEPS SIZE START IODEPTH
 *
 * The endpoint, region and keys come from the environment, as mdfio-s3's
 * do (awsconf.h). PHASE is precreate, benchmark or cleanup; prints
 * "PHASE SECONDS UNITS". Dataset markers go as mdfio-s3's: a precreate's
 * first unit makes each (a PUT with If-None-Match: *, then a HEAD), a
 * cleanup removes one once its last object is deleted (a HEAD, a listing
 * that must find nothing else, a DELETE), each request synchronous. */
#include <curl/curl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "awsconf.h"
#include "namespace.h"
#include "s3wire.h"

/* LIST: a GET of a listing, whose body is not an object */
enum method { HEAD, GET, DELETE, PUT, LIST };
static const char *const method_names[] = { "HEAD", "GET", "DELETE", "PUT", "GET" };
enum phase { PRECREATE, BENCHMARK, CLEANUP };

/* The room of the endpoint, bucket and prefix; of a URL: those, then a
 * dataset and an object, or a listing's query */
#define BASE_MAX (MDFIO_AWS_TEXT_MAX + MDFIO_S3_BUCKET_MAX + MDFIO_S3_PREFIX_MAX + 4)
#define URL_MAX (BASE_MAX + 3 * (MDFIO_S3_PREFIX_MAX + MDFIO_DATASET_NAME_MAX) + 64)

/* One unit in flight: which, its request now (a benchmark step's four in
 * turn), the handle that carries it and what its body brought. */
struct slot {
	CURL *h;
	uint64_t unit;
	unsigned int step;
	size_t got;
	char url[URL_MAX];
};

static struct mdfio_aws aws;
/* the markers' and listings' requests, on a handle and connection of
 * their own, as mdfio-s3's store makes them */
static struct slot store;
static char sigv4[MDFIO_AWS_KEY_MAX + 32];
static char base[BASE_MAX];	/* <endpoint>/<bucket>/[<prefix>/] */
static char *listing_prefix;	/* <prefix>/, for a dataset's listing */
static struct curl_slist *hdr, *hdr_put;
static char *buf;
static size_t size;
static uint32_t datasets;
static uint64_t precreate, steps, start, units;
static enum phase phase;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "s3-loop: %s\n", what);
	exit(1);
}

/* A response's body: a GET's into the object's buffer, the rest counted
 * only. */
static size_t take(char *data, size_t n, size_t nmemb, void *arg)
{
	struct slot *s = arg;
	size_t len = n * nmemb;

	if (s->got < size)
		memcpy(buf + s->got, data, len < size - s->got ? len : size - s->got);
	s->got += len;
	return len;
}

/* What does not change between a handle's requests. */
static CURL *handle(struct slot *s)
{
	CURL *h = curl_easy_init();

	if (!h)
		die("curl_easy_init failed");
	curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4);
	curl_easy_setopt(h, CURLOPT_USERNAME, aws.access_key);
	curl_easy_setopt(h, CURLOPT_PASSWORD, aws.secret_key);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, take);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(h, CURLOPT_PRIVATE, s);
	if (aws.ca_bundle[0])
		curl_easy_setopt(h, CURLOPT_CAINFO, aws.ca_bundle);
	return h;
}

/* Points s's handle at request m on its URL: only the options that differ
 * between the four methods. */
static void aim(struct slot *s, enum method m)
{
	CURL *h = s->h;

	s->got = 0;
	curl_easy_setopt(h, CURLOPT_URL, s->url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, m == PUT ? hdr_put : hdr);
	switch (m) {
	case HEAD:
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
		break;
	case GET:
	case LIST:
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
		break;
	case DELETE:
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
		break;
	case PUT:
		/* a PUT of POSTFIELDS, as mdfio-s3's: an upload from a
		 * callback would wait for "100 Continue" */
		curl_easy_setopt(h, CURLOPT_NOBODY, 0L);
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)size);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, buf);
		break;
	}
}

/* <base><rank>_<d>/<name> into s->url; name "" is the dataset's marker. */
static void key_url(struct slot *s, uint32_t d, const char *name)
{
	char ds[MDFIO_DATASET_NAME_MAX];

	mdfio_dataset_name(ds, 0, d);
	snprintf(s->url, sizeof(s->url), "%s%s/%s", base, ds, name);
}

static void object_url(struct slot *s, uint32_t d, uint64_t index)
{
	char name[MDFIO_OBJECT_NAME_MAX];

	mdfio_object_name(name, index);
	key_url(s, d, name);
}

/* The request of s's unit and step: which object, which method. */
static enum method next_request(struct slot *s)
{
	static const enum method cycle[] = { HEAD, GET, DELETE, PUT };
	uint64_t k = s->unit;

	switch (phase) {
	case PRECREATE:
		object_url(s, (uint32_t)(k % datasets), start + k / datasets);
		return PUT;
	case BENCHMARK:
		object_url(s, (uint32_t)(k % datasets), start + k / datasets + (s->step == 3 ? precreate : 0));
		return cycle[s->step];
	case CLEANUP:
		/* dataset by dataset, as mdfio's cleanup */
		object_url(s, (uint32_t)(k / precreate), start + k % precreate);
		return DELETE;
	}
	return HEAD;
}

/* Whether request m ended as it must: 2xx, a GET with the whole object.
 * Dies with one line otherwise. */
static void check(struct slot *s, enum method m, CURLcode rc)
{
	long status = 0;
	char line[URL_MAX + 128];

	curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK)
		snprintf(line, sizeof(line), "%s %s: %s", method_names[m], s->url, curl_easy_strerror(rc));
	else if (status < 200 || status >= 300)
		snprintf(line, sizeof(line), "%s %s: HTTP %ld", method_names[m], s->url, status);
	else if (m == GET && s->got != size)
		snprintf(line, sizeof(line), "GET %s: %zu bytes, expected %zu", s->url, s->got, size);
	else
		return;
	die(line);
}

/* One synchronous request of a dataset's marker (or a listing's, whose
 * URL is in s->url already); the body it brought. */
static size_t marker(struct slot *s, uint32_t d, enum method m)
{
	if (d != UINT32_MAX)
		key_url(s, d, "");
	aim(s, m);
	if (m == PUT)	/* the marker is empty */
		curl_easy_setopt(s->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
	check(s, m, curl_easy_perform(s->h));
	return s->got;
}

/* A dataset whose last object is gone: its marker goes once a listing of
 * two keys under it finds only the marker, as mdfio-s3's remove. */
static void remove_dataset(struct slot *s, uint32_t d)
{
	char ds[MDFIO_DATASET_NAME_MAX], p[MDFIO_S3_PREFIX_MAX + MDFIO_DATASET_NAME_MAX + 2];
	char enc[3 * sizeof(p) + 1], *key;
	const char *at;
	size_t len;

	marker(s, d, HEAD);
	mdfio_dataset_name(ds, 0, d);
	snprintf(p, sizeof(p), "%s%s/", listing_prefix, ds);
	mdfio_s3_encode(enc, p);
	/* the bucket's URL: base less the prefix */
	snprintf(s->url, sizeof(s->url), "%.*s?list-type=2&max-keys=2&prefix=%s",
		 (int)(strlen(base) - strlen(listing_prefix) - 1), base, enc);
	len = marker(s, UINT32_MAX, LIST);
	/* the listing's body went to buf, up to size bytes */
	at = buf;
	while ((key = mdfio_s3_element(at, (len < size ? len : size) - (size_t)(at - buf), "Key", &at))) {
		int other = strcmp(key, p) != 0;

		free(key);
		if (other)
			die("a dataset holds keys that were not deleted");
	}
	marker(s, d, DELETE);
}

static struct curl_slist *headers(int put)
{
	struct curl_slist *l = curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
	char token[MDFIO_AWS_TOKEN_MAX + 32];

	if (put) {
		l = curl_slist_append(l, "Content-Type: application/octet-stream");
		l = curl_slist_append(l, "If-None-Match: *");
	}
	if (aws.session_token[0]) {
		snprintf(token, sizeof(token), "x-amz-security-token: %s", aws.session_token);
		l = curl_slist_append(l, token);
	}
	if (!l)
		die("out of memory");
	return l;
}

int main(int argc, char **argv)
{
	static const struct mdfio_aws_options none = { NULL, NULL, NULL, NULL };
	char err[MDFIO_AWS_TEXT_MAX + 256], *slash;
	uint64_t next = 0, ended = 0, *left = NULL;
	unsigned int depth, i;
	struct slot *slots;
	CURLM *multi;
	double t0;

	if (argc != 9) {
		fprintf(stderr, "usage: s3-loop BUCKET[/PREFIX] PHASE DATASETS PRECREATE STEPS SIZE START IODEPTH\n");
		return 2;
	}
	if (!strcmp(argv[2], "precreate"))
		phase = PRECREATE;
	else if (!strcmp(argv[2], "benchmark"))
		phase = BENCHMARK;
	else if (!strcmp(argv[2], "cleanup"))
		phase = CLEANUP;
	else
		die("PHASE must be precreate, benchmark or cleanup");
	datasets = (uint32_t)strtoul(argv[3], NULL, 10);
	precreate = strtoull(argv[4], NULL, 10);
	steps = strtoull(argv[5], NULL, 10);
	size = strtoull(argv[6], NULL, 10);
	start = strtoull(argv[7], NULL, 10);
	depth = (unsigned int)strtoul(argv[8], NULL, 10);
	if (!datasets || !precreate || !size || !depth || depth > 4096)
		die("DATASETS, PRECREATE, SIZE and IODEPTH (up to 4096) must be 1 or more");
	units = (phase == BENCHMARK ? steps : precreate) * datasets;
	slash = strchr(argv[1], '/');
	if (slash)
		*slash = 0;
	if (!mdfio_s3_valid_bucket(argv[1]))
		die("BUCKET: expected 3 to 63 of a-z, 0-9, '-' and '.'");
	if (slash && (!slash[1] || !mdfio_s3_valid_prefix(slash + 1) || slash[strlen(slash) - 1] == '/'))
		die("PREFIX: expected what mdfio-s3's prefix= takes, without a '/' at its end");
	listing_prefix = malloc(slash ? strlen(slash + 1) + 2 : 1);
	if (!listing_prefix)
		die("out of memory");
	sprintf(listing_prefix, "%s%s", slash ? slash + 1 : "", slash ? "/" : "");
	if (mdfio_aws_resolve(&aws, &none, err, sizeof(err)))
		die(err);
	snprintf(sigv4, sizeof(sigv4), "aws:amz:%s:s3", aws.region);
	while (strlen(aws.endpoint) && aws.endpoint[strlen(aws.endpoint) - 1] == '/')
		aws.endpoint[strlen(aws.endpoint) - 1] = 0;
	snprintf(base, sizeof(base), "%s/%s/%s", aws.endpoint, argv[1], listing_prefix);
	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		die("curl_global_init failed");
	hdr = headers(0);
	hdr_put = headers(1);
	buf = malloc(size);
	slots = calloc(depth, sizeof(*slots));
	multi = curl_multi_init();
	if (!buf || !slots || !multi)
		die("out of memory");
	memset(buf, 'x', size);
	for (i = 0; i < depth; i++)
		slots[i].h = handle(&slots[i]);
	store.h = handle(&store);

	t0 = now();
	if (phase == PRECREATE) {
		uint32_t d;

		for (d = 0; d < datasets; d++) {
			marker(&store, d, PUT);
			marker(&store, d, HEAD);
		}
	} else if (phase == CLEANUP) {
		uint32_t d;

		left = malloc(datasets * sizeof(*left));
		if (!left)
			die("out of memory");
		for (d = 0; d < datasets; d++)
			left[d] = precreate;
	}
	for (i = 0; i < depth && next < units; i++) {
		slots[i].unit = next++;
		slots[i].step = 0;
		aim(&slots[i], next_request(&slots[i]));
		curl_multi_add_handle(multi, slots[i].h);
	}
	while (ended < units) {
		struct CURLMsg *msg;
		int running, n;

		if (curl_multi_perform(multi, &running) != CURLM_OK)
			die("curl_multi_perform failed");
		while ((msg = curl_multi_info_read(multi, &n))) {
			struct slot *s;
			enum method m;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
			m = next_request(s);
			check(s, m, msg->data.result);
			curl_multi_remove_handle(multi, s->h);
			if (phase == BENCHMARK && ++s->step < 4) {
				aim(s, next_request(s));
				curl_multi_add_handle(multi, s->h);
				continue;
			}
			ended++;
			if (phase == CLEANUP && !--left[s->unit / precreate])
				remove_dataset(&store, (uint32_t)(s->unit / precreate));
			if (next < units) {
				s->unit = next++;
				s->step = 0;
				aim(s, next_request(s));
				curl_multi_add_handle(multi, s->h);
			}
		}
		if (ended < units && curl_multi_poll(multi, NULL, 0, 1000, NULL) != CURLM_OK)
			die("curl_multi_poll failed");
	}
	printf("%s %.9f %llu\n", argv[2], now() - t0, (unsigned long long)units);

	for (i = 0; i < depth; i++)
		curl_easy_cleanup(slots[i].h);
	curl_easy_cleanup(store.h);
	curl_multi_cleanup(multi);
	curl_slist_free_all(hdr);
	curl_slist_free_all(hdr_put);
	curl_global_cleanup();
	free(listing_prefix);
	free(left);
	free(slots);
	free(buf);
	return 0;
}
