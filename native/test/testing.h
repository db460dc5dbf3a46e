/*
 * Shared helpers of the C test of the host reference runtime (test_pdrt): check macros, contexts
 * on loopback addresses, block patterns, bounded waits. Tests use the public ABI only.
 */
#ifndef PDRT_TESTING_H
#define PDRT_TESTING_H

#include "pdrt.h"

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

extern int failures;
extern const char *current;   /* name of the case running, for failure messages */

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            failures++;                                                                  \
            fprintf(stderr, "FAIL [%s] %s:%d: %s\n", current, __FILE__, __LINE__, #cond); \
        }                                                                                \
    } while (0)

#define CHECK_RC(got, want)                                                                         \
    do {                                                                                            \
        int32_t g_ = (got), w_ = (want);                                                            \
        if (g_ != w_) {                                                                             \
            failures++;                                                                             \
            fprintf(stderr, "FAIL [%s] %s:%d: %s = 0x%x, want 0x%x\n", current, __FILE__, __LINE__, \
                    #got, (unsigned)g_, (unsigned)w_);                                              \
        }                                                                                           \
    } while (0)

#define BLOCK 4096u
#define NBLOCKS 64u

int64_t mono_ms(void);
pdrt_cluster cluster(uint64_t id, const char *ip, uint16_t port);
/* A context listening on an ephemeral port of ip, or client-only when ip is NULL. */
pdrt_ctx *make_ctx(uint64_t id, const char *ip);
uint16_t port_of(pdrt_ctx *ctx);
int32_t link1(pdrt_ctx *ctx, pdrt_cluster c, int32_t timeout_ms);
int32_t unlink1(pdrt_ctx *ctx, uint64_t id, int force, int32_t timeout_ms);
/* The link to id, or state 0 when there is none. */
pdrt_link_info find_link(pdrt_ctx *ctx, uint64_t id);
/* Waits (bounded) for an event of kind about id, discarding others; 1 when seen. */
int wait_event(pdrt_ctx *ctx, uint32_t kind, uint64_t id, pdrt_event *out);
uint32_t drain_events(pdrt_ctx *ctx);
/* Polls a condition with a bounded deadline; 1 once it holds. */
int eventually(int (*cond)(void *), void *arg);
void fill_pattern(uint8_t *buf, uint32_t nblocks, uint32_t seed);
/* Fills every block of a cache with the pattern of seed. */
void write_all(pdrt_ctx *ctx, uint64_t cache_id, uint32_t seed);
/* 1 when local block dst of the cache equals block src of the pattern seed. */
int block_matches(pdrt_ctx *ctx, uint64_t cache_id, uint32_t dst, uint32_t seed, uint32_t src);

/* A server context in a forked process, for stuck (SIGSTOP) and dead (SIGKILL) peers. */
typedef struct {
    pid_t pid;
    uint16_t port;
    int cmd_wr;
} child_t;

child_t start_child(uint64_t id, const char *ip);

void test_links(void);
void test_blocks(void);
void test_faults(child_t ch);
void test_lifecycle(void);
void test_auth(void);
void test_caps(void);
void test_calls(void);

#endif /* PDRT_TESTING_H */
