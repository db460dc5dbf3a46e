/* Socket helpers (see net.h). */
#define _GNU_SOURCE
#include "net.h"
#include "util.h"

#include "pdrt.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

int net_field_len(const char *field, size_t cap) {
    const char *nul = memchr(field, '\0', cap);
    return nul == NULL ? -1 : (int)(nul - field);
}

int net_parse_ip(const char *text, uint16_t port, struct sockaddr_storage *ss, socklen_t *len) {
    if (text == NULL || net_field_len(text, PDRT_IP_MAX) <= 0) return -1;
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    if (inet_pton(AF_INET, text, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        *len = sizeof *v4;
        return 0;
    }
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET6, text, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        *len = sizeof *v6;
        return 0;
    }
    return -1;
}

void net_set_nonblock(int fd) {
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void net_tune(int fd, int keepalive) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (keepalive) net_keepalive(fd);
}

void net_keepalive(int fd) {
    /* Catches peers that vanish without a FIN (host down, cable pulled) within ~25 s. */
    int one = 1, idle = 10, intvl = 5, cnt = 3;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

int net_connect_start(const struct sockaddr_storage *to, socklen_t tolen, const char *local_ip,
                      uint16_t local_port) {
    int fd = socket(to->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if ((local_ip != NULL && local_ip[0] != '\0') || local_port != 0) {
        struct sockaddr_storage ls;
        socklen_t llen;
        const char *any = to->ss_family == AF_INET6 ? "::" : "0.0.0.0";
        const char *ip = local_ip != NULL && local_ip[0] != '\0' ? local_ip : any;
        int one = 1;
        /* Any port: let connect() pick it against the whole 4-tuple. A pick at bind() time would
         * search the address's ports against every TIME_WAIT left by earlier links, which grows
         * slow and runs out under link churn. A fixed port: allow it while TIME_WAIT holds it. */
        if (local_port == 0)
            setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
        else
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (net_parse_ip(ip, local_port, &ls, &llen) != 0 || ls.ss_family != to->ss_family ||
            bind(fd, (struct sockaddr *)&ls, llen) != 0) {
            close(fd);
            return -1;
        }
    }
    if (connect(fd, (const struct sockaddr *)to, tolen) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

static int wait_fd(int fd, short what, int64_t deadline) {
    for (;;) {
        struct pollfd p = { .fd = fd, .events = what };
        int r = poll(&p, 1, remaining_ms(deadline));
        if (r > 0) return NET_OK;
        if (r == 0) return NET_TIMEOUT;
        if (errno != EINTR) return NET_ERR;
    }
}

int net_connect_wait(int fd, int64_t deadline) {
    int r = wait_fd(fd, POLLOUT, deadline);
    if (r != NET_OK) return r;
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) return NET_ERR;
    return NET_OK;
}

int net_send_all(int fd, const void *buf, size_t len, int64_t deadline) {
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
    return net_sendv_all(fd, &iov, 1, deadline);
}

int net_recv_all(int fd, void *buf, size_t len, int64_t deadline) {
    struct iovec iov = { .iov_base = buf, .iov_len = len };
    return net_recvv_all(fd, &iov, 1, deadline);
}

/* Advances iov past n bytes; returns the new start index. */
static int iov_advance(struct iovec *iov, int cnt, int i, size_t n) {
    while (i < cnt && n >= iov[i].iov_len) {
        n -= iov[i].iov_len;
        iov[i].iov_len = 0;
        i++;
    }
    if (i < cnt && n > 0) {
        iov[i].iov_base = (uint8_t *)iov[i].iov_base + n;
        iov[i].iov_len -= n;
    }
    return i;
}

int net_sendv_all(int fd, struct iovec *iov, int cnt, int64_t deadline) {
    int i = iov_advance(iov, cnt, 0, 0);
    while (i < cnt) {
        int batch = cnt - i > 512 ? 512 : cnt - i;
        struct msghdr mh = { .msg_iov = iov + i, .msg_iovlen = (size_t)batch };
        ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            i = iov_advance(iov, cnt, i, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int r = wait_fd(fd, POLLOUT, deadline);
            if (r != NET_OK) return r;
            continue;
        }
        return NET_ERR;
    }
    return NET_OK;
}

int net_recvv_all(int fd, struct iovec *iov, int cnt, int64_t deadline) {
    int i = iov_advance(iov, cnt, 0, 0);
    while (i < cnt) {
        int batch = cnt - i > 512 ? 512 : cnt - i;
        struct msghdr mh = { .msg_iov = iov + i, .msg_iovlen = (size_t)batch };
        ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT);
        if (n > 0) {
            i = iov_advance(iov, cnt, i, (size_t)n);
            continue;
        }
        if (n == 0) return NET_ERR; /* EOF */
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int r = wait_fd(fd, POLLIN, deadline);
            if (r != NET_OK) return r;
            continue;
        }
        return NET_ERR;
    }
    return NET_OK;
}

int net_skip(int fd, uint64_t len, int64_t deadline) {
    uint8_t scratch[16384];
    while (len > 0) {
        size_t chunk = len > sizeof scratch ? sizeof scratch : (size_t)len;
        int r = net_recv_all(fd, scratch, chunk, deadline);
        if (r != NET_OK) return r;
        len -= chunk;
    }
    return NET_OK;
}

void net_addr_text(const struct sockaddr_storage *ss, char *ip, size_t cap, uint16_t *port) {
    ip[0] = '\0';
    *port = 0;
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &v4->sin_addr, ip, (socklen_t)cap);
        *port = ntohs(v4->sin_port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &v6->sin6_addr, ip, (socklen_t)cap);
        *port = ntohs(v6->sin6_port);
    }
}

int net_is_dead(int fd) {
    struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };
    if (poll(&p, 1, 0) <= 0) return 0;
    if (p.revents & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL)) return 1;
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

int net_same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b) {
    if (a->ss_family != b->ss_family) return 0;
    if (a->ss_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr == ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (a->ss_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &((const struct sockaddr_in6 *)b)->sin6_addr,
                      sizeof(struct in6_addr)) == 0;
    return 0;
}
