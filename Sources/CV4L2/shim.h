// Wrappers for what Swift cannot call in V4L2: the _IOR/_IOWR request macros,
// the v4l2_fourcc pixel-format macros and the variadic libv4l2 entry points.
#ifndef CV4L2_SHIM_H
#define CV4L2_SHIM_H
#include <fcntl.h>
#include <linux/videodev2.h>
#include <libv4l2.h>

static const unsigned long CV4L2_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP;
static const unsigned long CV4L2_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT;
static const unsigned long CV4L2_VIDIOC_G_FMT = VIDIOC_G_FMT;
static const unsigned long CV4L2_VIDIOC_S_FMT = VIDIOC_S_FMT;
static const unsigned long CV4L2_VIDIOC_TRY_FMT = VIDIOC_TRY_FMT;
static const unsigned long CV4L2_VIDIOC_REQBUFS = VIDIOC_REQBUFS;
static const unsigned long CV4L2_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF;
static const unsigned long CV4L2_VIDIOC_QBUF = VIDIOC_QBUF;
static const unsigned long CV4L2_VIDIOC_DQBUF = VIDIOC_DQBUF;
static const unsigned long CV4L2_VIDIOC_STREAMON = VIDIOC_STREAMON;
static const unsigned long CV4L2_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF;
static const unsigned long CV4L2_VIDIOC_G_PARM = VIDIOC_G_PARM;
static const unsigned long CV4L2_VIDIOC_S_PARM = VIDIOC_S_PARM;
static const unsigned long CV4L2_VIDIOC_ENUM_FRAMESIZES = VIDIOC_ENUM_FRAMESIZES;
static const unsigned long CV4L2_VIDIOC_ENUM_FRAMEINTERVALS = VIDIOC_ENUM_FRAMEINTERVALS;

static const __u32 CV4L2_PIX_FMT_YUYV = V4L2_PIX_FMT_YUYV;
static const __u32 CV4L2_PIX_FMT_UYVY = V4L2_PIX_FMT_UYVY;
static const __u32 CV4L2_PIX_FMT_NV12 = V4L2_PIX_FMT_NV12;
static const __u32 CV4L2_PIX_FMT_YUV420 = V4L2_PIX_FMT_YUV420;
static const __u32 CV4L2_PIX_FMT_MJPEG = V4L2_PIX_FMT_MJPEG;
static const __u32 CV4L2_PIX_FMT_JPEG = V4L2_PIX_FMT_JPEG;
static const __u32 CV4L2_PIX_FMT_RGB24 = V4L2_PIX_FMT_RGB24;

static inline int CV4L2_open(const char *path, int flags) { return v4l2_open(path, flags); }
static inline int CV4L2_ioctl(int fd, unsigned long request, void *argument) { return v4l2_ioctl(fd, request, argument); }

#endif
