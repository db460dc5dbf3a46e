/* Clocks, random numbers and descriptor vectors (see util.h). */
#define _GNU_SOURCE
#include "util.h"

#include <stdlib.h>
#include <sys/random.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int remaining_ms(int64_t deadline) {
    if (deadline < 0) return -1;
    int64_t left = deadline - now_ms();
    if (left <= 0) return 0;
    return left > 1000000000 ? 1000000000 : (int)left;
}

uint64_t random_u64(void) {
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
        v = (uint64_t)now_ms() * 0x9E3779B97F4A7C15ULL ^ (uint64_t)getpid();
    return v;
}

int fdvec_push(fdvec *fv, int fd) {
    if (fv->n == fv->cap) {
        size_t cap = fv->cap ? fv->cap * 2 : 8;
        int *v = realloc(fv->v, cap * sizeof *v);
        if (v == NULL) return -1;
        fv->v = v;
        fv->cap = cap;
    }
    fv->v[fv->n++] = fd;
    return 0;
}

void fdvec_remove_at(fdvec *fv, size_t i) {
    fv->v[i] = fv->v[--fv->n];
}

int cv_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline) {
    if (deadline < 0) return pthread_cond_wait(cv, mu);
    struct timespec ts = { .tv_sec = deadline / 1000, .tv_nsec = (long)(deadline % 1000) * 1000000L };
    return pthread_cond_timedwait(cv, mu, &ts);
}
