/*
 * nvml_probe: asks libnvidia-ml.so.1 a fixed set of edge-case questions and prints one line per
 * question, "<case> <return code>", so the fake NVML can be diffed against the real driver.
 * Run it on the GPU host (tests/gpu/run.sh records tests/gpu/nvml-probe.real.txt) and against the
 * simulated GPU (tests/fakegpu/test_probe.sh compares). Only device 0 is probed; it must be a
 * MIG-capable GPU with MIG disabled (the H100 of the GPU host; 1gpu.conf simulates it).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "abi/nvml.h"

#define LOAD(name) gs_##name##_fn p_##name = (gs_##name##_fn)dlsym(h, #name)
#define SHOW(label, expr) printf("%-44s %d\n", label, (int)(expr))

int main(void)
{
        void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
        if (h == NULL) {
                fprintf(stderr, "nvml_probe: %s\n", dlerror());
                return 1;
        }
        LOAD(nvmlInit_v2);
        LOAD(nvmlShutdown);
        LOAD(nvmlDeviceGetCount_v2);
        LOAD(nvmlDeviceGetHandleByIndex_v2);
        LOAD(nvmlDeviceGetHandleByUUID);
        LOAD(nvmlDeviceGetHandleByPciBusId_v2);
        LOAD(nvmlDeviceGetUUID);
        LOAD(nvmlDeviceGetName);
        LOAD(nvmlDeviceGetMemoryInfo);
        LOAD(nvmlDeviceGetMemoryInfo_v2);
        LOAD(nvmlDeviceGetMigMode);
        LOAD(nvmlDeviceGetMaxMigDeviceCount);
        LOAD(nvmlDeviceGetMigDeviceHandleByIndex);
        LOAD(nvmlDeviceGetGpuInstanceId);
        LOAD(nvmlDeviceGetComputeInstanceId);
        LOAD(nvmlDeviceIsMigDeviceHandle);
        LOAD(nvmlDeviceGetDeviceHandleFromMigDeviceHandle);
        LOAD(nvmlSystemGetDriverVersion);
        LOAD(nvmlDeviceGetComputeRunningProcesses_v3);
        LOAD(nvmlDeviceGetMinorNumber);
        LOAD(nvmlDeviceGetCudaComputeCapability);

        unsigned n = 0;
        nvmlDevice_t d = NULL, m = NULL;
        char buf[128];
        SHOW("count.before_init", p_nvmlDeviceGetCount_v2(&n));
        SHOW("init", p_nvmlInit_v2());
        SHOW("init.again", p_nvmlInit_v2());
        SHOW("count.null", p_nvmlDeviceGetCount_v2(NULL));
        SHOW("count", p_nvmlDeviceGetCount_v2(&n));
        SHOW("handle.bad_index", p_nvmlDeviceGetHandleByIndex_v2(n, &d));
        SHOW("handle.null", p_nvmlDeviceGetHandleByIndex_v2(0, NULL));
        SHOW("handle.0", p_nvmlDeviceGetHandleByIndex_v2(0, &d));
        SHOW("uuid.null_buf", p_nvmlDeviceGetUUID(d, NULL, 96));
        SHOW("uuid.short_buf", p_nvmlDeviceGetUUID(d, buf, 8));
        SHOW("uuid", p_nvmlDeviceGetUUID(d, buf, sizeof(buf)));
        SHOW("handle_by_uuid.unknown", p_nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000", &m));
        SHOW("handle_by_uuid.garbage", p_nvmlDeviceGetHandleByUUID("bogus", &m));
        SHOW("handle_by_bus.unknown", p_nvmlDeviceGetHandleByPciBusId_v2("0000:ff:1f.0", &m));
        SHOW("name.short_buf", p_nvmlDeviceGetName(d, buf, 4));
        SHOW("driver_version.short_buf", p_nvmlSystemGetDriverVersion(buf, 4));
        SHOW("memory.null", p_nvmlDeviceGetMemoryInfo(d, NULL));
        nvmlMemory_v2_t mem2;
        memset(&mem2, 0, sizeof(mem2));
        SHOW("memory_v2.no_version", p_nvmlDeviceGetMemoryInfo_v2(d, &mem2));
        mem2.version = nvmlMemory_v2;
        SHOW("memory_v2", p_nvmlDeviceGetMemoryInfo_v2(d, &mem2));
        unsigned cur = 9, pend = 9;
        SHOW("mig_mode", p_nvmlDeviceGetMigMode(d, &cur, &pend));
        SHOW("mig_mode.current", cur);
        SHOW("mig_mode.null", p_nvmlDeviceGetMigMode(d, NULL, &pend));
        unsigned max = 99;
        SHOW("max_mig_count", p_nvmlDeviceGetMaxMigDeviceCount(d, &max));
        SHOW("max_mig_count.value", max);
        SHOW("mig_handle.mig_off", p_nvmlDeviceGetMigDeviceHandleByIndex(d, 0, &m));
        unsigned id = 0;
        SHOW("gpu_instance_id.full_gpu", p_nvmlDeviceGetGpuInstanceId(d, &id));
        SHOW("compute_instance_id.full_gpu", p_nvmlDeviceGetComputeInstanceId(d, &id));
        unsigned is_mig = 7;
        SHOW("is_mig_handle", p_nvmlDeviceIsMigDeviceHandle(d, &is_mig));
        SHOW("is_mig_handle.value", is_mig);
        SHOW("parent_of_full_gpu", p_nvmlDeviceGetDeviceHandleFromMigDeviceHandle(d, &m));
        unsigned cnt = 0;
        SHOW("procs.count_query", p_nvmlDeviceGetComputeRunningProcesses_v3(d, &cnt, NULL));
        SHOW("procs.null_count", p_nvmlDeviceGetComputeRunningProcesses_v3(d, NULL, NULL));
        SHOW("minor.null", p_nvmlDeviceGetMinorNumber(d, NULL));
        int ma = 0, mi = 0;
        SHOW("cc.null_minor", p_nvmlDeviceGetCudaComputeCapability(d, &ma, NULL));
        SHOW("shutdown", p_nvmlShutdown());
        SHOW("shutdown.again", p_nvmlShutdown());
        SHOW("count.after_shutdown", p_nvmlDeviceGetCount_v2(&n));
        (void)mi;
        return 0;
}
