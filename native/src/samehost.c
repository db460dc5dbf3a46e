/*
 * The same-host path. Each context exposes a probe memfd holding a random token; a peer that can
 * open /proc/<pid>/fd/<fd> and read the token back is on this machine, in a pid namespace that
 * sees us, with the right to open our memory. Caches are then mapped the same way, with their
 * identity (cache id, generation, geometry) checked against the header written by their owner.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "net.h"
#include "wire.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void samehost_init(pdrt_ctx *ctx) {
    ctx->pid = (int32_t)getpid();
    ctx->probe_token = random_u64();
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, ctx->boot_id, 36);
        ctx->boot_id[n == 36 ? 36 : 0] = '\0';
        close(fd);
    }
    ctx->probe_fd = memfd_create("pdrt-probe", MFD_CLOEXEC);
    if (ctx->probe_fd >= 0 && pwrite(ctx->probe_fd, &ctx->probe_token, sizeof ctx->probe_token, 0) != 8) {
        close(ctx->probe_fd);
        ctx->probe_fd = -1;
    }
    if (ctx->probe_fd < 0) ctx->boot_id[0] = '\0'; /* nothing to prove with: never same-host */
}

void samehost_fini(pdrt_ctx *ctx) {
    if (ctx->probe_fd >= 0) close(ctx->probe_fd);
    ctx->probe_fd = -1;
}

static int open_peer_fd(int32_t pid, uint32_t fd, int writable) {
    if (pid <= 0 || fd > 1u << 30) return -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%u", (int)pid, fd);
    return open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOCTTY);
}

static int read_probe(int32_t pid, uint32_t fd, uint64_t *token) {
    int f = open_peer_fd(pid, fd, 0);
    if (f < 0) return -1;
    ssize_t n = pread(f, token, sizeof *token, 0);
    close(f);
    return n == (ssize_t)sizeof *token ? 0 : -1;
}

/* Opening /proc/<pid>/fd/<fd> is the dearest step of a handshake (a path walk and a permission
 * check), and links come and go between the same processes all the time: what one read proved
 * is remembered. A token is random per process, so a stale entry (the pid reused by a new
 * process with a probe at the same fd) can only make a proof fail, never pass: the server
 * re-reads on a mismatch, and the client forgets the entry when the server denies the proof. */
int samehost_probe_token(pdrt_ctx *ctx, uint64_t remote_id, int32_t pid, uint32_t fd, uint64_t *token) {
    if (pid <= 0) return -1;
    pthread_mutex_lock(&ctx->mu);
    for (uint32_t i = 0; i < PROBE_MEMO; i++) {
        probe_memo *m = &ctx->memo[i];
        if (m->pid == pid && m->fd == fd) {
            m->remote_id = remote_id;
            *token = m->token;
            pthread_mutex_unlock(&ctx->mu);
            return 0;
        }
    }
    pthread_mutex_unlock(&ctx->mu);
    if (read_probe(pid, fd, token) != 0) return -1;
    pthread_mutex_lock(&ctx->mu);
    for (uint32_t i = 0; i < PROBE_MEMO; i++) /* one entry per context: the newest process behind it */
        if (ctx->memo[i].remote_id == remote_id) ctx->memo[i].pid = 0;
    ctx->memo[ctx->memo_next++ % PROBE_MEMO] = (probe_memo){ .remote_id = remote_id, .pid = pid, .fd = fd,
                                                             .token = *token };
    pthread_mutex_unlock(&ctx->mu);
    return 0;
}

int samehost_recall(pdrt_ctx *ctx, uint64_t remote_id, int32_t *pid, uint32_t *fd, uint64_t *token) {
    int rc = -1;
    pthread_mutex_lock(&ctx->mu);
    for (uint32_t i = 0; i < PROBE_MEMO && rc != 0; i++) {
        const probe_memo *m = &ctx->memo[i];
        if (m->pid == 0 || m->remote_id != remote_id) continue;
        *pid = m->pid;
        *fd = m->fd;
        *token = m->token;
        rc = 0;
    }
    pthread_mutex_unlock(&ctx->mu);
    return rc;
}

void samehost_forget(pdrt_ctx *ctx, int32_t pid, uint32_t fd) {
    pthread_mutex_lock(&ctx->mu);
    for (uint32_t i = 0; i < PROBE_MEMO; i++)
        if (ctx->memo[i].pid == pid && ctx->memo[i].fd == fd) ctx->memo[i].pid = 0;
    pthread_mutex_unlock(&ctx->mu);
}

int peer_map_valid(const peer_map *m) {
    return __atomic_load_n(&((const shm_hdr *)m->base)->valid, __ATOMIC_ACQUIRE) == 1u;
}

void peer_map_put(peer_map *m) {
    if (--m->refs > 0) return;
    munmap(m->base, m->size);
    free(m);
}

/* Asks the peer which memfd holds cache_id, over a data connection of the link. */
static int32_t ask_info(pdrt_ctx *ctx, link_t *lk, xfer *x, uint64_t cache_id, int64_t deadline, wire_resp *info) {
    int32_t rc;
    int fd = conn_acquire(ctx, lk, x, deadline, &rc);
    if (fd < 0) return rc;
    uint8_t b[REQ_SIZE > RESP_SIZE ? REQ_SIZE : RESP_SIZE];
    wire_req q = { .op = OP_INFO, .cache_id = cache_id, .timeout_ms = (uint32_t)remaining_ms(deadline) };
    wire_put_req(b, &q);
    int r = net_send_all(fd, b, REQ_SIZE, deadline);
    if (r == NET_OK) r = net_recv_all(fd, b, RESP_SIZE, deadline);
    if (r == NET_OK && wire_get_resp(b, info) != 0) r = NET_ERR;
    conn_release(ctx, lk, x, fd, r == NET_OK);
    return r == NET_OK ? info->status : net_status(r);
}

static peer_map *map_peer(int32_t pid, uint64_t cache_id, const wire_resp *info, int writable) {
    int fd = open_peer_fd(pid, info->fd, writable);
    if (fd < 0) return NULL;
    size_t size = SHM_HDR_BYTES + (size_t)info->num_blocks * info->block_bytes;
    struct stat st;
    uint8_t *base = MAP_FAILED;
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_size == size)
        base = mmap(NULL, size, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) return NULL;
    const shm_hdr *h = (const shm_hdr *)base;
    peer_map *m = calloc(1, sizeof *m);
    if (m == NULL || h->magic != SHM_MAGIC || h->cache_id != cache_id || h->gen != info->gen ||
        h->num_blocks != info->num_blocks || h->block_bytes != info->block_bytes) {
        free(m);
        munmap(base, size);
        return NULL;
    }
    m->cache_id = cache_id;
    m->gen = info->gen;
    m->num_blocks = info->num_blocks;
    m->block_bytes = info->block_bytes;
    m->writable = writable;
    m->base = base;
    m->size = size;
    m->refs = 1;
    return m;
}

peer_map *peer_map_get(pdrt_ctx *ctx, link_t *lk, xfer *x, uint64_t cache_id, int writable, int64_t deadline,
                       int32_t *rc) {
    pthread_mutex_lock(&ctx->mu);
    for (peer_map **pp = &lk->maps; *pp != NULL; pp = &(*pp)->next) {
        peer_map *m = *pp;
        if (m->cache_id != cache_id || (writable && !m->writable)) continue;
        if (peer_map_valid(m)) {
            m->refs++;
            pthread_mutex_unlock(&ctx->mu);
            return m;
        }
        *pp = m->next; /* the owner unregistered it: forget it and ask again */
        peer_map_put(m);
        break;
    }
    pthread_mutex_unlock(&ctx->mu);

    wire_resp info;
    *rc = ask_info(ctx, lk, x, cache_id, deadline, &info);
    if (*rc != PDRT_SUCCESS) return NULL;
    peer_map *m = map_peer(lk->peer_pid, cache_id, &info, writable);
    if (m == NULL) {
        *rc = MAP_USE_TCP;
        return NULL;
    }
    pthread_mutex_lock(&ctx->mu);
    m->next = lk->maps;
    lk->maps = m;
    m->refs++;
    pthread_mutex_unlock(&ctx->mu);
    return m;
}
