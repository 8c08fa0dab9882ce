#include "mrc/mrc.h"

const char *mrc_version(void)
{
    return MRC_VERSION_STRING;
}
