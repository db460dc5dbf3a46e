/*
 * One control message on a link's control connection, sent without blocking: the link table, the
 * I/O thread, unlinking and the data-connection pool all speak to the peer this way.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "wire.h"

#include <errno.h>
#include <sys/socket.h>

int ctl_send(int fd, uint32_t type, uint64_t arg) {
    uint8_t b[CTL_SIZE];
    wire_ctl m = { .type = type, .arg = arg };
    wire_put_ctl(b, &m);
    ssize_t n;
    do n = send(fd, b, sizeof b, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof b) return 0;
    /* A 16-byte message that does not fit means the peer stopped reading long ago; a partial one
     * would desynchronise the stream. Either way the connection is done. */
    if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))) shutdown(fd, SHUT_RDWR);
    return -1;
}
