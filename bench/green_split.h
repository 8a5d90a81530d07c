// make_green(dev, asked, &sms): a green context on at least `asked` SMs of dev, through the driver
// API (linked with -lcuda); the split rounds up to the driver's granularity (8 SMs on an H100),
// and *sms is what it gave. Exits through CKD (cuda_check.h) on an error.
#pragma once
#include <cstring>
#include "cuda_check.h"

static CUgreenCtx make_green(CUdevice dev, unsigned asked, unsigned *sms)
{
        CUdevResource all, group, rest;
        std::memset(&all, 0, sizeof all);
        std::memset(&group, 0, sizeof group);
        std::memset(&rest, 0, sizeof rest);
        CKD(cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
        unsigned groups = 1;
        CKD(cuDevSmResourceSplitByCount(&group, &groups, &all, &rest, 0, asked));
        CUdevResourceDesc desc;
        CKD(cuDevResourceGenerateDesc(&desc, &group, 1));
        CUgreenCtx g;
        CKD(cuGreenCtxCreate(&g, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
        *sms = group.sm.smCount;
        return g;
}
