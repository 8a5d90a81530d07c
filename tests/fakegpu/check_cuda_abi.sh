#!/usr/bin/env bash
# Checks src/abi/cuda.h (our own declarations) against NVIDIA's cuda.h where a CUDA toolkit is
# installed (CUDA_HOME, else /usr/local/cuda); skipped (77) elsewhere. Nothing is copied: the
# toolkit header is only compiled against.
#   1. every entry point of GS_CUDA_FUNCTIONS has the real signature of that exported version
#      (the toolkit header declares every version with __CUDA_API_VERSION_INTERNAL);
#   2. every enumerator and constant we declare has the real value;
#   3. the structs we declare have the real size and field offsets.
set -uo pipefail
src=$1
inc=${CUDA_HOME:-/usr/local/cuda}/include
if [ ! -f "$inc/cuda.h" ]; then echo "SKIP: no CUDA toolkit header ($inc/cuda.h)"; exit 77; fi
cc=${CC:-cc}
ours=$src/../../src/abi/cuda.h
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. signatures
{
        echo '#define __CUDA_API_VERSION_INTERNAL 1'
        echo '#include <cuda.h>'
        echo 'typedef CUdeviceptr_v1 gs_CUdeviceptr_v1;'
        sed -n '/^#define GS_CUDA_FUNCTIONS(X)/,/^$/p' "$ours"
        echo '#define CHK(name, ret, params) typedef ret (*mine_##name) params; \'
        echo '  _Static_assert(__builtin_types_compatible_p(__typeof__(&name), mine_##name), "signature of " #name);'
        echo 'GS_CUDA_FUNCTIONS(CHK)'
} >"$tmp/sig.c"
if ! "$cc" -std=gnu11 -I"$inc" -c "$tmp/sig.c" -o /dev/null; then
        echo "FAIL: an entry point of src/abi/cuda.h differs from the toolkit's"; exit 1
fi
n=$(grep -c '^ *X(cu' "$ours")

# 2. constants: every CU*/CUDA_* enumerator or #define of ours, printed through both headers
names=$(grep -oE '^ *(CU|CUDA)_[A-Z0-9_]+ *=' "$ours" | tr -d ' =' ; grep -oE '^#define (CU|CUDA)_[A-Z0-9_]+ ' "$ours" | awk '{print $2}')
gen() {
        echo "$1"
        echo '#include <stdio.h>'
        echo 'int main(void) {'
        for c in $names; do echo "    printf(\"$c %lld\\n\", (long long)(uintptr_t)($c));"; done
        for s in CUuuid CUmemLocation CUmemAllocationProp CUmemAccessDesc CUmemPoolProps CUDA_ARRAY_DESCRIPTOR \
                CUDA_ARRAY3D_DESCRIPTOR CUexecAffinityParam CUctxCreateParams CUdevSmResource CUdevResource \
                CUdevResource_v1 CUdevResourceType CUgreenCtx CUdevResourceDesc CUdevprop CUDA_ARRAY_MEMORY_REQUIREMENTS \
                CUDA_MEM_ALLOC_NODE_PARAMS CUgraphNodeParams CUmemcpyAttributes CUmemcpy3DOperand \
                CUDA_MEMCPY3D_BATCH_OP CUpointer_attribute CUmem_range_attribute CUmem_advise; do
                echo "    printf(\"sizeof($s) %zu\\n\", sizeof($s));"
        done
        for f in CUmemAllocationProp:type CUmemAllocationProp:requestedHandleTypes CUmemAllocationProp:location \
                CUmemAllocationProp:win32HandleMetaData CUmemAllocationProp:allocFlags \
                CUmemPoolProps:location CUmemPoolProps:win32SecurityAttributes CUmemPoolProps:maxSize \
                CUmemPoolProps:usage CUmemPoolProps:reserved CUDA_ARRAY_DESCRIPTOR:Format \
                CUDA_ARRAY_DESCRIPTOR:NumChannels CUDA_ARRAY3D_DESCRIPTOR:Depth CUDA_ARRAY3D_DESCRIPTOR:Format \
                CUDA_ARRAY3D_DESCRIPTOR:NumChannels CUDA_ARRAY3D_DESCRIPTOR:Flags CUmemAccessDesc:flags \
                CUctxCreateParams:numExecAffinityParams CUctxCreateParams:cigParams \
                CUdevSmResource:smCount CUdevSmResource:minSmPartitionSize CUdevSmResource:smCoscheduledAlignment \
                CUdevResource:type CUdevResource:_internal_padding CUdevResource:sm CUdevResource:_oversize \
                CUdevprop:textureAlign CUDA_MEM_ALLOC_NODE_PARAMS:accessDescs CUDA_MEM_ALLOC_NODE_PARAMS:accessDescCount \
                CUDA_MEM_ALLOC_NODE_PARAMS:bytesize CUDA_MEM_ALLOC_NODE_PARAMS:dptr CUgraphNodeParams:alloc \
                CUgraphNodeParams:reserved2 CUmemcpyAttributes:srcLocHint CUmemcpyAttributes:dstLocHint \
                CUmemcpyAttributes:flags CUmemcpy3DOperand:op CUmemcpy3DOperand:op.ptr.locHint \
                CUmemcpy3DOperand:op.array.offset CUDA_MEMCPY3D_BATCH_OP:dst CUDA_MEMCPY3D_BATCH_OP:extent \
                CUDA_MEMCPY3D_BATCH_OP:srcAccessOrder CUDA_MEMCPY3D_BATCH_OP:flags; do
                echo "    printf(\"offsetof(${f%%:*}.${f##*:}) %zu\\n\", __builtin_offsetof(${f%%:*}, ${f##*:}));"
        done
        echo '    return 0; }'
}
gen $'#include <stdint.h>\n#include <cuda.h>' >"$tmp/real.c"
gen $'#include <stdint.h>\n#include "abi/cuda.h"' >"$tmp/ours.c"
"$cc" -std=gnu11 -I"$inc" "$tmp/real.c" -o "$tmp/real" && "$cc" -std=gnu11 -I"$src/../../src" "$tmp/ours.c" -o "$tmp/ours" ||
        { echo "FAIL: cannot build the constant / layout printers"; exit 1; }
"$tmp/real" >"$tmp/real.out" && "$tmp/ours" >"$tmp/ours.out"
if ! diff -u "$tmp/real.out" "$tmp/ours.out"; then
        echo "FAIL: constants or layouts of src/abi/cuda.h differ from the toolkit's (- toolkit, + ours)"; exit 1
fi
echo "src/abi/cuda.h agrees with $inc/cuda.h: $n entry points, $(grep -c . "$tmp/ours.out") constants and layouts"
