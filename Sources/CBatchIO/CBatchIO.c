#define _GNU_SOURCE
#include <sys/eventfd.h>
#include "CBatchIO.h"
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

/// Points one message header per datagram at its buffer and address: the whole
/// capacity and room for any address to receive, the bytes and address held to send.
static void prepare(struct mmsghdr *headers, struct iovec *vectors, const CBatchIO_datagram *datagrams, unsigned count,
                    int receiving) {
    memset(headers, 0, sizeof(struct mmsghdr) * count);
    for (unsigned i = 0; i < count; i++) {
        vectors[i].iov_base = datagrams[i].buffer;
        vectors[i].iov_len = receiving ? datagrams[i].capacity : datagrams[i].length;
        headers[i].msg_hdr.msg_iov = &vectors[i];
        headers[i].msg_hdr.msg_iovlen = 1;
        headers[i].msg_hdr.msg_name = (void *)&datagrams[i].address;
        headers[i].msg_hdr.msg_namelen = receiving ? sizeof(struct sockaddr_storage) : datagrams[i].addressLength;
    }
}

/// Room for one SCM_TIMESTAMPNS control message, aligned for cmsghdr.
typedef union {
    char bytes[CMSG_SPACE(sizeof(struct timespec))];
    struct cmsghdr align;
} CBatchIO_control;

/// The arrival stamp in a received message's control data, or 0.
static long long arrivalOf(struct msghdr *header) {
    if (header->msg_flags & MSG_CTRUNC) return 0;
    for (struct cmsghdr *message = CMSG_FIRSTHDR(header); message; message = CMSG_NXTHDR(header, message)) {
        if (message->cmsg_level == SOL_SOCKET && message->cmsg_type == SCM_TIMESTAMPNS &&
            message->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
            struct timespec stamp;
            memcpy(&stamp, CMSG_DATA(message), sizeof stamp);
            return (long long)stamp.tv_sec * 1000000000LL + stamp.tv_nsec;
        }
    }
    return 0;
}

int CBatchIO_receive(int descriptor, CBatchIO_datagram *datagrams, unsigned count) {
    if (count > CBATCHIO_MAXIMUM) count = CBATCHIO_MAXIMUM;
    struct mmsghdr headers[CBATCHIO_MAXIMUM];
    struct iovec vectors[CBATCHIO_MAXIMUM];
    CBatchIO_control controls[CBATCHIO_MAXIMUM];
    prepare(headers, vectors, datagrams, count, 1);
    for (unsigned i = 0; i < count; i++) {
        headers[i].msg_hdr.msg_control = controls[i].bytes;
        headers[i].msg_hdr.msg_controllen = sizeof controls[i].bytes;
    }
    int received;
    // ECONNREFUSED: an ICMP error from an earlier send, which says nothing about what waits
    // (the call that reports it clears it), so the read is made again.
    do {
        received = recvmmsg(descriptor, headers, count, MSG_DONTWAIT, NULL);
    } while (received < 0 && (errno == EINTR || errno == ECONNREFUSED));
    if (received < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
        return -errno;
    }
    for (int i = 0; i < received; i++) {
        datagrams[i].length = headers[i].msg_len;
        datagrams[i].addressLength = headers[i].msg_hdr.msg_namelen;
        datagrams[i].arrival = arrivalOf(&headers[i].msg_hdr);
    }
    return received;
}

int CBatchIO_send(int descriptor, const CBatchIO_datagram *datagrams, unsigned count) {
    if (count > CBATCHIO_MAXIMUM) count = CBATCHIO_MAXIMUM;
    struct mmsghdr headers[CBATCHIO_MAXIMUM];
    struct iovec vectors[CBATCHIO_MAXIMUM];
    prepare(headers, vectors, datagrams, count, 0);
    unsigned done = 0;
    while (done < count) {
        int sent = sendmmsg(descriptor, headers + done, count - done, 0);
        if (sent < 0) {
            if (errno == EINTR) continue;
            // A peer that is not listening answers with ICMP; skip its datagram.
            if (errno == ECONNREFUSED) { done++; continue; }
            return done > 0 ? (int)done : -errno;
        }
        done += (unsigned)sent;
    }
    return (int)done;
}

int CBatchIO_wait(struct pollfd *descriptors, nfds_t count, long long nanoseconds) {
    struct timespec timeout = { .tv_sec = (time_t)(nanoseconds / 1000000000LL), .tv_nsec = (long)(nanoseconds % 1000000000LL) };
    return ppoll(descriptors, count, &timeout, NULL);
}

int CBatchIO_stampArrivals(int descriptor) {
    int on = 1;
    return setsockopt(descriptor, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) == 0 ? 0 : -errno;
}

long long CBatchIO_realtime(void) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
}

int CBatchIO_doorbell(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}
