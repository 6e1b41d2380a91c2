// libpng's simplified API (png_image_*): no setjmp, no variadic calls; nothing to wrap.
#include <png.h>
