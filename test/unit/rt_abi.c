/*
** test/unit/rt_abi.c: runtime/driver.h restates CUDA's types and constants
** so that libattnrt builds without the toolkit; this checks them against
** cuda.h at compile time (built only where cuda.h is found).
*/
#include <cuda.h>

#include "driver.h"

#define SAME(ours, theirs) _Static_assert((int)(ours) == (int)(theirs), #ours " != " #theirs)

SAME(AR_CUDA_SUCCESS, CUDA_SUCCESS);
SAME(AR_CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_VALUE);
SAME(AR_CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY);
SAME(AR_CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_NOT_INITIALIZED);
SAME(AR_CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE);
SAME(AR_CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_DEVICE);
SAME(AR_CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_CONTEXT);
SAME(AR_CUDA_ERROR_NO_BINARY_FOR_GPU, CUDA_ERROR_NO_BINARY_FOR_GPU);
SAME(AR_CUDA_ERROR_INVALID_PTX, CUDA_ERROR_INVALID_PTX);
SAME(AR_CUDA_ERROR_UNSUPPORTED_PTX_VERSION, CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
SAME(AR_CUDA_ERROR_NOT_FOUND, CUDA_ERROR_NOT_FOUND);
SAME(AR_CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
SAME(AR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
SAME(AR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
SAME(AR_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
     CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
SAME(AR_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
SAME(AR_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
     CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
SAME(AR_CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER);
SAME(AR_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES);
SAME(AR_CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER);
SAME(AR_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
SAME(AR_CU_GET_PROC_ADDRESS_DEFAULT, CU_GET_PROC_ADDRESS_DEFAULT);
SAME(AR_CU_GET_PROC_ADDRESS_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS);
SAME(AR_CU_EVENT_DEFAULT, CU_EVENT_DEFAULT);
_Static_assert(sizeof(ARdeviceptr) == sizeof(CUdeviceptr), "CUdeviceptr");
_Static_assert(sizeof(ARresult) == sizeof(CUresult), "CUresult");
_Static_assert(sizeof(ARdevice) == sizeof(CUdevice), "CUdevice");
_Static_assert(sizeof(int) == sizeof(CUjit_option), "CUjit_option");
_Static_assert(sizeof(int) == sizeof(CUdriverProcAddressQueryResult), "query result");
_Static_assert(sizeof(unsigned long long) == sizeof(cuuint64_t), "cuuint64_t");

/* The handle types are the same struct pointers. */
static void same_handles(void)
{
	ARcontext c = (CUcontext)0;
	ARmodule m = (CUmodule)0;
	ARfunction f = (CUfunction)0;
	ARstream s = (CUstream)0;
	ARevent e = (CUevent)0;
	(void)c, (void)m, (void)f, (void)s, (void)e;
}

int main(void)
{
	same_handles();
	return 0;
}
