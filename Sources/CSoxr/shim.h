// libsoxr (sample-rate conversion at device and file edges) imports as it is.
#ifndef CSOXR_SHIM_H
#define CSOXR_SHIM_H
#include <soxr.h>
#endif
