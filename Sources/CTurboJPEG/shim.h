// libjpeg-turbo's TurboJPEG API (MJPEG webcam frames) imports as it is.
#ifndef CTURBOJPEG_SHIM_H
#define CTURBOJPEG_SHIM_H
#include <turbojpeg.h>
#endif
