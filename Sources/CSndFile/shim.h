// libsndfile imports into Swift as it is; this header only names it.
#ifndef CSNDFILE_SHIM_H
#define CSNDFILE_SHIM_H
#include <sndfile.h>
#endif
