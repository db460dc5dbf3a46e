/*
 * The floor of a link call made off the JavaScript thread by a native thread instead of a worker
 * thread, for bench/links-floor.bench.ts: one native thread waits on a condition variable for a
 * call (nothing, pdrt_link or pdrt_unlink on records the caller keeps alive until the answer),
 * makes it and answers through a callback that JavaScript registered as thread-safe (bun:ffi
 * JSCallback with threadsafe: true), which queues the answer on the JavaScript thread's event loop.
 * One call at a time; a second call while one is pending is refused. Built by `make bench`.
 */
#include "pdrt.h"

#include <pthread.h>
#include <stdint.h>

typedef void (*hop_answer)(int32_t ret);

enum { HOP_NOTHING = 0, HOP_LINK = 1, HOP_UNLINK = 2 };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static hop_answer answer;
static int started;
static struct {
    int pending;
    int32_t op;
    pdrt_ctx *ctx;
    const pdrt_cluster *clusters;
    uint32_t n;
    int32_t timeout_ms;
    int32_t *rets;
} call;

static void *serve(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (!call.pending) pthread_cond_wait(&cv, &mu);
        int32_t op = call.op;
        pdrt_ctx *ctx = call.ctx;
        const pdrt_cluster *clusters = call.clusters;
        uint32_t n = call.n;
        int32_t timeout_ms = call.timeout_ms;
        int32_t *rets = call.rets;
        pthread_mutex_unlock(&mu);
        int32_t ret = PDRT_SUCCESS;
        if (op == HOP_LINK) ret = pdrt_link(ctx, clusters, n, timeout_ms, rets);
        else if (op == HOP_UNLINK) ret = pdrt_unlink(ctx, clusters, n, timeout_ms, 0, rets);
        pthread_mutex_lock(&mu);
        call.pending = 0;
        pthread_mutex_unlock(&mu);
        answer(ret);
    }
    return NULL;
}

/* Starts the thread once; 0, or the error of pthread_create. */
int32_t hop_start(hop_answer on_answer) {
    pthread_mutex_lock(&mu);
    int rc = 0;
    if (!started) {
        answer = on_answer;
        pthread_t thread;
        rc = pthread_create(&thread, NULL, serve, NULL);
        if (rc == 0) {
            pthread_detach(thread);
            started = 1;
        }
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

/* Hands the thread one call; 0, or -1 when the thread is not started or a call is pending. */
int32_t hop_call(int32_t op, pdrt_ctx *ctx, const pdrt_cluster *clusters, uint32_t n, int32_t timeout_ms,
                 int32_t *rets) {
    pthread_mutex_lock(&mu);
    if (!started || call.pending) {
        pthread_mutex_unlock(&mu);
        return -1;
    }
    call.op = op;
    call.ctx = ctx;
    call.clusters = clusters;
    call.n = n;
    call.timeout_ms = timeout_ms;
    call.rets = rets;
    call.pending = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    return 0;
}
