// alsa-lib needs no wrappers yet: hardware parameters are allocated with
// snd_pcm_hw_params_malloc instead of the snd_pcm_hw_params_alloca macro.
#ifndef CALSA_SHIM_H
#define CALSA_SHIM_H
#include <alsa/asoundlib.h>
#endif
