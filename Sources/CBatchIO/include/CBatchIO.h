// recvmmsg/sendmmsg and ppoll for Swift: glibc declares them only under _GNU_SOURCE,
// which Swift's Glibc module does not define; and the kernel's arrival stamps, whose
// control messages Swift cannot walk (CMSG_* are macros). Nothing else belongs here.
#ifndef CBATCHIO_H
#define CBATCHIO_H
#include <stddef.h>
#include <sys/socket.h>
#include <poll.h>
#include <time.h>

/// The most datagrams one call moves.
#define CBATCHIO_MAXIMUM 64

/// One datagram: its buffer, the bytes in it, the peer's address, and (received) when the
/// kernel took it off the wire, in nanoseconds of CLOCK_REALTIME (0 when the socket
/// gives no time: see `CBatchIO_stampArrivals`).
typedef struct {
    void *buffer;
    size_t capacity;
    size_t length;
    struct sockaddr_storage address;
    socklen_t addressLength;
    long long arrival;
} CBatchIO_datagram;

/// Reads up to `count` waiting datagrams without blocking, each with its arrival time.
/// Returns how many were read (0 when none waits), or -errno.
int CBatchIO_receive(int descriptor, CBatchIO_datagram *datagrams, unsigned count);

/// Asks the kernel to stamp each datagram the socket receives with the time it arrived
/// (SO_TIMESTAMPNS), which `CBatchIO_receive` reads. Returns 0, or -errno.
int CBatchIO_stampArrivals(int descriptor);

/// CLOCK_REALTIME now, in nanoseconds: the clock of the arrival stamps.
long long CBatchIO_realtime(void);

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
