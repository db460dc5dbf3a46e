/* The call queue: calls answered through the callback, order, deadlines, holders, refusals, destroy. */
#define _GNU_SOURCE
#include "testing.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#define SLOTS 8u

static pthread_mutex_t done_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static uint32_t done_order[64];
static uint32_t done_count;
/* While set, the callback holds its thread until the test clears it. */
static int gate_closed;

static void on_done(uint32_t slot) {
    pthread_mutex_lock(&done_mu);
    if (done_count < 64) done_order[done_count] = slot;
    done_count++;
    pthread_cond_broadcast(&done_cv);
    while (gate_closed) pthread_cond_wait(&done_cv, &done_mu);
    pthread_mutex_unlock(&done_mu);
}

static void open_gate(void) {
    pthread_mutex_lock(&done_mu);
    gate_closed = 0;
    pthread_cond_broadcast(&done_cv);
    pthread_mutex_unlock(&done_mu);
}

/* Waits (bounded) until `count` callbacks have come; 1 when they have. */
static int wait_done(uint32_t count) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&done_mu);
    int ok = 1;
    while (done_count < count && ok) ok = pthread_cond_timedwait(&done_cv, &done_mu, &until) == 0;
    ok = done_count >= count;
    pthread_mutex_unlock(&done_mu);
    return ok;
}

static void reset_done(void) {
    pthread_mutex_lock(&done_mu);
    done_count = 0;
    pthread_mutex_unlock(&done_mu);
}

static int64_t wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fill(pdrt_call *c, pdrt_ctx *ctx, uint32_t op, const pdrt_cluster *clusters, uint32_t n) {
    memset(c, 0, sizeof *c);
    c->ctx = (uint64_t)(uintptr_t)ctx;
    c->deadline_ms = wall_now() + 5000;
    c->op = op;
    c->n = n;
    c->timeout_ms = 2000;
    memcpy(c->clusters, clusters, sizeof *clusters * n);
    for (uint32_t i = 0; i < n; i++) c->rets[i] = 12345;
}

static pdrt_call slots[SLOTS];

static void test_calls_bad(void) {
    current = "calls: bad arguments";
    pdrt_calls *q = NULL;
    CHECK_RC(pdrt_calls_create(0, slots, SLOTS, on_done, &q), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_calls_create(PDRT_CALLS_MAX_THREADS + 1, slots, SLOTS, on_done, &q), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_calls_create(1, NULL, SLOTS, on_done, &q), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_calls_create(1, slots, 0, on_done, &q), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_calls_create(1, slots, SLOTS, NULL, &q), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_calls_create(1, slots, SLOTS, on_done, NULL), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_calls_create(1, (pdrt_call *)((char *)slots + 4), SLOTS - 1, on_done, &q), PDRT_PARAM_INVALID);
    CHECK(q == NULL);
    CHECK_RC(pdrt_calls_submit(NULL, 0), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_calls_destroy(NULL), PDRT_PARAM_INVALID);
}

static void test_calls_link_unlink(void) {
    current = "calls: link, holders, unlink, deadline";
    pdrt_ctx *p = make_ctx(61, "127.0.0.2");
    pdrt_ctx *d = make_ctx(62, NULL);
    pdrt_cluster c[2] = {cluster(61, "127.0.0.2", port_of(p)), cluster(69, "127.0.0.2", 1)};
    pdrt_calls *q = NULL;
    CHECK_RC(pdrt_calls_create(2, slots, SLOTS, on_done, &q), PDRT_SUCCESS);
    reset_done();

    /* A link of two: one reaches its server, one is refused (nothing listens on port 1). */
    fill(&slots[3], d, PDRT_CALL_LINK, c, 2);
    CHECK_RC(pdrt_calls_submit(q, 3), PDRT_SUCCESS);
    CHECK(wait_done(1));
    CHECK(done_order[0] == 3);
    CHECK_RC(slots[3].ret, PDRT_FAILED);
    CHECK_RC(slots[3].rets[0], PDRT_SUCCESS);
    CHECK_RC(slots[3].rets[1], PDRT_LINK_FAILED);
    CHECK(slots[3].holders_known == 0);
    CHECK(find_link(d, 61).state == PDRT_LINK_LINKED);

    /* Linking again: ALREADY_LINK, and this context holds the link as its client. */
    fill(&slots[3], d, PDRT_CALL_LINK, c, 1);
    CHECK_RC(pdrt_calls_submit(q, 3), PDRT_SUCCESS);
    CHECK(wait_done(2));
    CHECK_RC(slots[3].rets[0], PDRT_ALREADY_LINK);
    CHECK(slots[3].holders_known == 1 && slots[3].holders[0] == 1 + PDRT_SIDE_CLIENT);

    /* After a forced unlink here the server alone holds it: ALREADY_LINK, held by nobody here. */
    CHECK_RC(unlink1(d, 61, 1, 2000), PDRT_SUCCESS);
    fill(&slots[5], d, PDRT_CALL_LINK, c, 1);
    CHECK_RC(pdrt_calls_submit(q, 5), PDRT_SUCCESS);
    CHECK(wait_done(3));
    CHECK_RC(slots[5].rets[0], PDRT_ALREADY_LINK);
    CHECK(slots[5].holders_known == 1 && slots[5].holders[0] == 0);
    CHECK_RC(unlink1(p, 62, 1, 2000), PDRT_SUCCESS);

    /* A call whose deadline passed while it waited is not made. */
    fill(&slots[0], d, PDRT_CALL_LINK, c, 1);
    slots[0].deadline_ms = wall_now() - 1;
    CHECK_RC(pdrt_calls_submit(q, 0), PDRT_SUCCESS);
    CHECK(wait_done(4));
    CHECK_RC(slots[0].ret, PDRT_FAILED);
    CHECK_RC(slots[0].rets[0], PDRT_TIMEOUT);
    CHECK(find_link(d, 61).state == 0);

    /* Link, then unlink by the queue; a call refused as a whole keeps its code. */
    fill(&slots[1], d, PDRT_CALL_LINK, c, 1);
    CHECK_RC(pdrt_calls_submit(q, 1), PDRT_SUCCESS);
    CHECK(wait_done(5));
    CHECK_RC(slots[1].ret, PDRT_SUCCESS);
    fill(&slots[1], d, PDRT_CALL_UNLINK, c, 1);
    CHECK_RC(pdrt_calls_submit(q, 1), PDRT_SUCCESS);
    CHECK(wait_done(6));
    CHECK_RC(slots[1].ret, PDRT_SUCCESS);
    CHECK_RC(slots[1].rets[0], PDRT_SUCCESS);
    CHECK(find_link(d, 61).state == 0);
    fill(&slots[2], d, PDRT_CALL_LINK, c, 0);
    CHECK_RC(pdrt_calls_submit(q, 2), PDRT_SUCCESS);
    CHECK(wait_done(7));
    CHECK_RC(slots[2].ret, PDRT_PARAM_INVALID);
    fill(&slots[2], d, 7, c, 1);
    CHECK_RC(pdrt_calls_submit(q, 2), PDRT_SUCCESS);
    CHECK(wait_done(8));
    CHECK_RC(slots[2].ret, PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_calls_submit(q, SLOTS), PDRT_PARAM_INVALID);

    CHECK_RC(pdrt_calls_destroy(q), PDRT_SUCCESS);
    pdrt_destroy(d);
    pdrt_destroy(p);
}

static void test_calls_queue(void) {
    current = "calls: one thread, FIFO, busy slot refused, destroy drains";
    pdrt_ctx *d = make_ctx(63, NULL);
    /* Port 1 of a loopback address: refused at once, so each call is quick and its order shows. */
    pdrt_cluster c = cluster(64, "127.0.0.2", 1);
    pdrt_calls *q = NULL;
    CHECK_RC(pdrt_calls_create(1, slots, SLOTS, on_done, &q), PDRT_SUCCESS);
    reset_done();
    /* The first call's answer holds the only thread, so the others wait in the queue. */
    gate_closed = 1;
    fill(&slots[0], d, PDRT_CALL_LINK, &c, 1);
    CHECK_RC(pdrt_calls_submit(q, 0), PDRT_SUCCESS);
    CHECK(wait_done(1));
    uint32_t order[SLOTS - 1] = {4, 1, 7, 6, 2, 5, 3};
    for (uint32_t i = 0; i < SLOTS - 1; i++) fill(&slots[order[i]], d, PDRT_CALL_LINK, &c, 1);
    for (uint32_t i = 0; i < SLOTS - 1; i++) {
        CHECK_RC(pdrt_calls_submit(q, order[i]), PDRT_SUCCESS);
        CHECK_RC(pdrt_calls_submit(q, order[i]), PDRT_PARAM_INVALID); /* queued already */
    }
    /* Slot 0's call has ended (its answer is being given): it may be taken again. */
    fill(&slots[0], d, PDRT_CALL_LINK, &c, 1);
    CHECK_RC(pdrt_calls_submit(q, 0), PDRT_SUCCESS);
    open_gate();
    /* Destroy waits for every call and its answer. */
    CHECK_RC(pdrt_calls_destroy(q), PDRT_SUCCESS);
    CHECK(done_count == SLOTS + 1);
    for (uint32_t i = 0; i < SLOTS - 1; i++) CHECK(done_order[1 + i] == order[i]);
    CHECK(done_order[SLOTS] == 0);
    for (uint32_t i = 0; i < SLOTS; i++) CHECK_RC(slots[i].rets[0], PDRT_LINK_FAILED);
    /* After destroy no handle is left to submit to; a new queue starts clean. */
    CHECK_RC(pdrt_calls_create(1, slots, SLOTS, on_done, &q), PDRT_SUCCESS);
    CHECK_RC(pdrt_calls_destroy(q), PDRT_SUCCESS);
    pdrt_destroy(d);
}

void test_calls(void) {
    test_calls_bad();
    test_calls_link_unlink();
    test_calls_queue();
}
