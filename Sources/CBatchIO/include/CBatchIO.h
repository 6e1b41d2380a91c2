// recvmmsg/sendmmsg and ppoll for Swift: glibc declares them only under _GNU_SOURCE,
// which Swift's Glibc module does not define. Nothing else belongs here.
#ifndef CBATCHIO_H
#define CBATCHIO_H
#include <stddef.h>
#include <sys/socket.h>
#include <poll.h>
#include <time.h>

/// The most datagrams one call moves.
#define CBATCHIO_MAXIMUM 64

/// One datagram: its buffer, the bytes in it, and the peer's address.
typedef struct {
    void *buffer;
    size_t capacity;
    size_t length;
    struct sockaddr_storage address;
    socklen_t addressLength;
} CBatchIO_datagram;

/// Reads up to `count` waiting datagrams without blocking.
/// Returns how many were read (0 when none waits), or -errno.
int CBatchIO_receive(int descriptor, CBatchIO_datagram *datagrams, unsigned count);

/// Sends `count` datagrams in one call, retrying on EINTR.
/// Returns how many were sent, or -errno when the first could not be.
int CBatchIO_send(int descriptor, const CBatchIO_datagram *datagrams, unsigned count);

/// Waits up to `nanoseconds` (>= 0) for an event on `descriptors`, to the nanosecond
/// (poll takes whole milliseconds). Returns what ppoll returns; errno as it sets it.
int CBatchIO_wait(struct pollfd *descriptors, nfds_t count, long long nanoseconds);

/// A non-blocking, close-on-exec eventfd (a doorbell one thread rings for another's wait).
/// Returns the descriptor, or -1 with errno set.
int CBatchIO_doorbell(void);

#endif
