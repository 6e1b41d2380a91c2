// libyuv's C API (scaling, conversion, PSNR/SSIM) imports as it is.
#ifndef CYUV_SHIM_H
#define CYUV_SHIM_H
#include <libyuv.h>
#endif
