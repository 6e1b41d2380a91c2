// zlib, for the CRC-32 in STUN's FINGERPRINT; crc32() imports as it is.
#ifndef CZLIB_SHIM_H
#define CZLIB_SHIM_H
#include <zlib.h>
#endif
